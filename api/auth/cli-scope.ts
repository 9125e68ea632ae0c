import type { MiddlewareHandler } from 'hono';
import { ApiError } from '../../domain/errors.ts';

/**
 * What a CLI key may not do: the one place that restricts `x-cli-key` callers
 * (documented in docs/cli.md). Everything else is what an API key of the same
 * mode may do.
 */
export const cliKeyDenied: { method: string; path: RegExp; liveOnly?: boolean; why: string }[] = [
  { method: '*', path: /^\/v1\/users(\/|$)/, why: 'user management' },
  { method: '*', path: /^\/v1\/accounts(\/|$)/, why: 'account management' },
  { method: 'PATCH', path: /^\/v1\/account(\/|$)/, why: 'account management' },
  { method: 'DELETE', path: /^\/v1\/account(\/|$)/, why: 'account management' },
  { method: 'POST', path: /^\/v1\/account(\/|$)/, why: 'account management' },
  { method: '*', path: /^\/v1\/api_keys(\/|$)/, why: 'API key management' },
  { method: 'POST', path: /^\/v1\/cli_keys\/?$/, why: 'minting keys' },
  { method: '*', path: /^\/v1\/cli\/device\/approve$/, why: 'approving logins' },
  { method: '*', path: /^\/v1\/settings(\/|$)/, why: 'account settings' },
  { method: '*', path: /^\/v1\/auth\/session(\/|$)/, why: 'sessions' },
  { method: '*', path: /^\/v1\/payouts(\/|$)/, liveOnly: true, why: 'live payouts' },
];

export function restrictCliKeys(): MiddlewareHandler {
  return async (c, next) => {
    const principal = c.get('principal');
    if (principal?.kind === 'cli_key') {
      const denied = cliKeyDenied.find(
        (rule) => (rule.method === '*' || rule.method === c.req.method) && rule.path.test(c.req.path) && (!rule.liveOnly || principal.livemode),
      );
      if (denied) throw new ApiError('forbidden', `CLI keys cannot be used for ${denied.why}; use the dashboard or an owner session.`);
    }
    return next();
  };
}
