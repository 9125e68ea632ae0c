import type { MikroORM } from '@mikro-orm/postgresql';
import { type Context, Hono } from 'hono';
import { getCookie } from 'hono/cookie';
import { html } from 'hono/html';

import { ApiError } from '../../domain/errors.ts';
import { approveDeviceLogin, normalizeUserCode, pendingDeviceLogin } from '../../services/accounts/cli-keys.ts';
import { csrfTokenFor, csrfTokenMatches, sessionCookieName, verifyBrowserToken } from '../auth/browser-session.ts';
import { findLiveSession } from '../auth/principal.ts';
import { secretKey } from '../auth/tokens.ts';
import type { AppDeps } from '../deps.ts';
import { type Html, isCrossSitePost, page, stateCard } from './layout.ts';

const footer = 'Billing engine · CLI login';
const title = 'Approve a CLI login';

/** The owner signed in to the dashboard in this browser (its session cookie), or why not. */
type Signer =
  | { ok: true; sessionId: string; userId: string; accountId: string; email: string; accountName: string }
  | { ok: false; reason: 'signed_out' | 'not_owner' };

async function signedInOwner(c: Context, orm: MikroORM, key: Uint8Array): Promise<Signer> {
  const cookie = getCookie(c, sessionCookieName);
  const claims = cookie ? await verifyBrowserToken(key, cookie) : null;
  const session = claims ? await findLiveSession(orm, claims.sessionId) : undefined;
  if (!claims || !session || session.user_id !== claims.userId) return { ok: false, reason: 'signed_out' };
  if (session.role !== 'owner' || !session.account_id) return { ok: false, reason: 'not_owner' };
  const [user] = await orm.em
    .getConnection()
    .execute<{ email: string }[]>(`select email from users where id = ?`, [session.user_id]);
  return {
    ok: true,
    sessionId: claims.sessionId,
    userId: session.user_id,
    accountId: session.account_id,
    email: user?.email ?? '',
    accountName: session.a_name ?? '',
  };
}

/**
 * GET /cli/approve?code=ABCD-EFGH: the page `billing login` opens. An owner signed in to the
 * dashboard in this browser sees the code and the device and approves with one click (a form
 * posted to the same path with the session's CSRF token; same origin only); anyone else is
 * sent to sign in first and brought back here. The API equivalent is POST /v1/cli/device/approve.
 */
export function cliApprovePage({ config, context: { orm } }: AppDeps) {
  const key = secretKey(config.auth.secret);
  const here = (code: string) => `/cli/approve${code ? `?code=${encodeURIComponent(code)}` : ''}`;
  const show = (c: Context, status: number, body: Html) => page(c, status, title, body, null, false, undefined, footer);

  async function approvalForm(c: Context, code: string, signer: Signer, problem?: string, status = 200) {
    const head = html`<h1>${title}</h1>${problem ? html`<div class="alert error" role="alert">${problem}</div>` : ''}`;
    if (!signer.ok) {
      const signIn = `/dashboard/?next=${encodeURIComponent(here(code))}`;
      const why =
        signer.reason === 'not_owner'
          ? html`<p class="muted">You are signed in, but only the account's owner approves a CLI login. Sign in as the owner.</p>`
          : html`<p class="muted">Sign in to the dashboard in this browser as the account's owner, then come back to this page to approve.</p>`;
      return show(
        c,
        signer.reason === 'not_owner' ? 403 : status,
        html`${head}${code ? html`<p class="code" aria-label="Login code">${code}</p>` : ''}${why}
<p><a class="button" href="${signIn}">Sign in to the dashboard</a></p>
<p><a class="back" href="${here(code)}">I have signed in: reload</a></p>`,
      );
    }
    const pending = code ? await pendingDeviceLogin(orm, code) : null;
    if (!pending) {
      return show(
        c,
        problem ? status : 404,
        html`${head}<p class="muted">${code ? `No login is waiting under ${code}: it may have expired or been approved already.` : 'The link has no login code.'} Run <code>billing login</code> again for a new one.</p>`,
      );
    }
    return show(
      c,
      status,
      html`${head}
<p class="muted">Check that this code matches the one your terminal shows.</p>
<p class="code" aria-label="Login code">${code}</p>
<dl><dt>Device</dt><dd>${pending.deviceName}</dd><dt>Account</dt><dd>${signer.accountName}</dd><dt>Signed in as</dt><dd>${signer.email}</dd></dl>
<form method="post" action="/cli/approve">
<input type="hidden" name="user_code" value="${code}">
<input type="hidden" name="csrf_token" value="${csrfTokenFor(config.auth.secret, signer.sessionId)}">
<label class="field">Mode <select name="mode"><option value="test">Test (sandbox): no real money</option><option value="live">Live</option></select></label>
<button type="submit">Approve</button>
</form>
<p><a class="back" href="/dashboard/">← Back to the dashboard</a></p>`,
    );
  }

  return new Hono()
    .get('/approve', async (c) => {
      const code = normalizeUserCode(c.req.query('code') ?? '') ?? '';
      return approvalForm(c, code, await signedInOwner(c, orm, key));
    })
    .post('/approve', async (c) => {
      if (isCrossSitePost(c, config.publicUrl))
        return show(c, 403, stateCard('bad', '!', 'Refused', [html`Cross-site form posts are refused.`]));
      const body = (await c.req.parseBody().catch(() => ({}))) as Record<string, unknown>;
      const code = normalizeUserCode(typeof body.user_code === 'string' ? body.user_code : '') ?? '';
      const signer = await signedInOwner(c, orm, key);
      if (!signer.ok)
        return approvalForm(c, code, signer, 'Sign in to the dashboard as the account owner to approve.', 401);
      // The session cookie alone does not approve: the form carries the session's CSRF token, which another site cannot read.
      if (
        !csrfTokenMatches(
          config.auth.secret,
          signer.sessionId,
          typeof body.csrf_token === 'string' ? body.csrf_token : undefined,
        )
      ) {
        return approvalForm(c, code, signer, 'This form has expired; approve again.', 403);
      }
      try {
        const { deviceName } = await approveDeviceLogin(orm, {
          userCode: code,
          accountId: signer.accountId,
          userId: signer.userId,
          livemode: body.mode === 'live',
        });
        const mode = body.mode === 'live' ? 'live' : 'test';
        return show(
          c,
          200,
          html`${stateCard('ok', '✓', 'CLI login approved', [html`${deviceName} is logged in to ${signer.accountName} in ${mode} mode; you can close this page and go back to your terminal.`])}
<p><a class="back" href="/dashboard/">← Back to the dashboard</a></p>`,
        );
      } catch (error) {
        if (error instanceof ApiError) return approvalForm(c, code, signer, error.message, error.status);
        throw error;
      }
    });
}
