import { Hono } from 'hono';
import { html } from 'hono/html';
import { ApiError } from '../../domain/errors.ts';
import { approveDeviceLogin, normalizeUserCode } from '../../services/cli-keys.ts';
import { findLiveSession } from '../auth/principal.ts';
import { secretKey, verifyAccessToken } from '../auth/tokens.ts';
import type { ApiDeps } from '../deps.ts';
import { isCrossSitePost, page, stateCard } from './layout.ts';

/**
 * GET /cli/approve?code=ABCD-EFGH: the page `billing login` links to. The owner
 * confirms the code shown in the terminal, picks the mode, and proves who they
 * are with a dashboard access token (from POST /v1/auth/login); the form posts
 * to the same path (same-origin only). The API equivalent is POST /v1/cli/device/approve.
 */
export function cliApprovePage({ orm, config }: ApiDeps) {
  const key = secretKey(config.auth.secret);
  const form = (code: string, problem?: string) => html`
<h1>Approve a CLI login</h1>
<p class="muted">Check that the code matches the one your terminal shows.</p>
${problem ? html`<p class="error" role="alert">${problem}</p>` : ''}
<form method="post" action="/cli/approve">
<label>Code <input name="user_code" value="${code}" required autocomplete="off"></label>
<label>Mode <select name="mode"><option value="test">test (sandbox)</option><option value="live">live</option></select></label>
<label>Owner access token <input name="access_token" type="password" required autocomplete="off"></label>
<button type="submit">Approve</button>
</form>`;
  return new Hono()
    .get('/approve', (c) => page(c, 200, 'Approve a CLI login', form(normalizeUserCode(c.req.query('code') ?? '') ?? '')))
    .post('/approve', async (c) => {
      if (isCrossSitePost(c, config.publicUrl)) return page(c, 403, 'Refused', stateCard('bad', '!', 'Refused', [html`Cross-site form posts are refused.`]));
      const body = (await c.req.parseBody().catch(() => ({}))) as Record<string, unknown>;
      const code = typeof body.user_code === 'string' ? body.user_code : '';
      const token = typeof body.access_token === 'string' ? body.access_token : '';
      const claims = await verifyAccessToken(key, token);
      const session = claims ? await findLiveSession(orm, claims.sessionId) : undefined;
      if (!claims || !session || session.user_id !== claims.userId || session.role !== 'owner' || !session.account_id) {
        return page(c, 401, 'Approve a CLI login', form(code, 'That access token is not a valid session of an account owner.'));
      }
      try {
        const { deviceName } = await approveDeviceLogin(orm, { userCode: code, accountId: session.account_id, userId: session.user_id, livemode: body.mode === 'live' });
        return page(c, 200, 'CLI login approved', stateCard('ok', '✓', 'CLI login approved', [html`${deviceName} is logged in; you can close this page.`]));
      } catch (error) {
        if (error instanceof ApiError) return page(c, error.status, 'Approve a CLI login', form(code, error.message));
        throw error;
      }
    });
}
