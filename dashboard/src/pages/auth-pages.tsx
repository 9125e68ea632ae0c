/**
 * The pages a person meets signed out, beside the sign-in: sign-up (POST /v1/accounts, then the cookie
 * session at once), "forgot your password" (POST /v1/auth/password_reset) and the reset page the emailed
 * link opens (POST /v1/auth/password_reset/confirm, the token in the URL fragment).
 */
import { useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { type FormEvent, type ReactNode, useId, useState } from 'react';

import { passwordPolicyProblem } from '../../../domain/passwords.ts';
import { api, unwrap } from '../api.ts';
import { ErrorNote } from '../ui.tsx';

/** The policy the API checks (domain/passwords.ts), said before typing and checked before sending. */
const passwordHint = 'At least 8 characters, with an uppercase letter, a number and a symbol.';
function checkPassword(password: string) {
  const problem = passwordPolicyProblem(password);
  if (problem) throw new Error(`The ${problem}.`);
}

function SignedOutForm(props: {
  title: string;
  submit: string;
  onSubmit: (form: FormData) => Promise<void>;
  children: ReactNode;
  footer?: ReactNode;
}) {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await props.onSubmit(new FormData(event.currentTarget));
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  }
  return (
    <main className="sign-in">
      <form className="card form" onSubmit={submit} aria-label={props.title}>
        <h1>{props.title}</h1>
        {props.children}
        <ErrorNote error={error} />
        <button type="submit" disabled={busy}>
          {props.submit}
        </button>
        {props.footer}
      </form>
    </main>
  );
}

function Input(props: {
  label: string;
  name: string;
  type?: string;
  autoComplete?: string;
  hint?: string;
  defaultValue?: string;
}) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      <input
        id={id}
        name={props.name}
        type={props.type ?? 'text'}
        autoComplete={props.autoComplete}
        required
        defaultValue={props.defaultValue}
        aria-describedby={props.hint ? `${id}-hint` : undefined}
      />
      {props.hint ? (
        <small id={`${id}-hint`} className="muted">
          {props.hint}
        </small>
      ) : null}
    </div>
  );
}

export function SignUp() {
  const client = useQueryClient();
  const navigate = useNavigate();
  const typeId = useId();
  return (
    <SignedOutForm
      title="Create your account"
      submit="Create account"
      onSubmit={async (form) => {
        const email = String(form.get('email'));
        const password = String(form.get('password'));
        checkPassword(password);
        await unwrap(
          api.POST('/v1/accounts', {
            body: {
              email,
              password,
              name: String(form.get('name')),
              type: form.get('type') === 'individual' ? 'individual' : 'business',
            },
          }),
        );
        // The account's owner signs in at once: the dashboard opens in the sandbox.
        const session = await unwrap(api.POST('/v1/auth/browser_session', { body: { email, password } }));
        client.setQueryData(['session'], session);
        await navigate({ to: '/' });
      }}
      footer={
        <p>
          Already have an account? <Link to="/">Sign in</Link>
        </p>
      }
    >
      <Input label="Business or your name" name="name" autoComplete="organization" />
      <Input label="Email" name="email" type="email" autoComplete="username" />
      <Input label="Password" name="password" type="password" autoComplete="new-password" hint={passwordHint} />
      <div className="field">
        <label htmlFor={typeId}>Account type</label>
        <select id={typeId} name="type" defaultValue="business">
          <option value="business">Business</option>
          <option value="individual">Individual</option>
        </select>
      </div>
    </SignedOutForm>
  );
}

export function ForgotPassword() {
  const [sentTo, setSentTo] = useState<string | null>(null);
  return (
    <SignedOutForm
      title="Reset your password"
      submit="Email me a reset link"
      onSubmit={async (form) => {
        const email = String(form.get('email'));
        await unwrap(api.POST('/v1/auth/password_reset', { body: { email } }));
        setSentTo(email);
      }}
      footer={
        <p>
          <Link to="/">Back to sign in</Link>
        </p>
      }
    >
      {sentTo ? (
        <p role="status">
          If an account uses {sentTo}, a link to choose a new password is on its way. It works once, for an hour.
        </p>
      ) : null}
      <Input label="Email" name="email" type="email" autoComplete="username" />
    </SignedOutForm>
  );
}

export function ResetPassword() {
  const token = new URLSearchParams(window.location.hash.slice(1)).get('token') ?? '';
  const [done, setDone] = useState(false);
  if (done) {
    return (
      <main className="sign-in">
        <section className="card form" aria-label="Password reset">
          <h1>Password set</h1>
          <p role="status">Your new password is set and every earlier session is signed out.</p>
          <p>
            <Link to="/">Sign in</Link>
          </p>
        </section>
      </main>
    );
  }
  return (
    <SignedOutForm
      title="Choose a new password"
      submit="Set new password"
      onSubmit={async (form) => {
        const password = String(form.get('password'));
        checkPassword(password);
        if (password !== String(form.get('again'))) throw new Error('The two passwords differ.');
        await unwrap(api.POST('/v1/auth/password_reset/confirm', { body: { token, password } }));
        setDone(true);
      }}
      footer={
        <p>
          <Link to="/forgot-password">Ask for a new link</Link>
        </p>
      }
    >
      {token ? null : <p className="error">This page needs the link from the reset email.</p>}
      <Input label="New password" name="password" type="password" autoComplete="new-password" hint={passwordHint} />
      <Input label="New password again" name="again" type="password" autoComplete="new-password" />
    </SignedOutForm>
  );
}
