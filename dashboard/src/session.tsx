import { useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { createContext, type FormEvent, useContext, useState } from 'react';

import { api, ApiFailure, type Schemas, unwrap } from './api.ts';
import { ErrorNote } from './ui.tsx';

export type BrowserSession = Schemas['BrowserSession'];
export const SessionContext = createContext<BrowserSession | null>(null);

export function useSession(): BrowserSession {
  const session = useContext(SessionContext);
  if (!session) throw new Error('no session');
  return session;
}

/** Owners and admins manage keys, team, webhooks and settings; members see what the access table lets them. */
export const canManage = (session: BrowserSession) => session.user.role !== 'member';

export function useBrowserSession() {
  return useQuery({
    queryKey: ['session'],
    retry: false,
    queryFn: async () => {
      try {
        return await unwrap(api.GET('/v1/auth/browser_session'));
      } catch (error) {
        if (error instanceof ApiFailure && error.status === 401) return null;
        throw error;
      }
    },
  });
}

export function SignIn() {
  const client = useQueryClient();
  const [error, setError] = useState<unknown>(null);
  async function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setError(null);
    try {
      const session = await unwrap(
        api.POST('/v1/auth/browser_session', {
          body: { email: String(form.get('email')), password: String(form.get('password')) },
        }),
      );
      // Sent here to sign in by the CLI's approval page (/dashboard/?next=/cli/approve?code=…): back to it, and only to it.
      const next = new URLSearchParams(location.search).get('next');
      if (next?.startsWith('/cli/approve?')) return location.assign(next);
      client.setQueryData(['session'], session);
    } catch (failure) {
      setError(failure);
    }
  }
  return (
    <main className="sign-in">
      <form className="card form" onSubmit={onSubmit} aria-label="Sign in">
        <h1>Sign in</h1>
        <div className="field">
          <label htmlFor="email">Email</label>
          <input id="email" name="email" type="email" autoComplete="username" required />
        </div>
        <div className="field">
          <label htmlFor="password">Password</label>
          <input id="password" name="password" type="password" autoComplete="current-password" required />
        </div>
        <ErrorNote error={error} />
        <button type="submit">Sign in</button>
        <p>
          <Link to="/forgot-password">Forgot your password?</Link>
        </p>
        <p>
          New here? <Link to="/sign-up">Create an account</Link>
        </p>
      </form>
    </main>
  );
}
