import type { MiddlewareHandler } from 'hono';

import type { DispatchWaker } from '../../services/webhooks/wake.ts';

/** After each write on an account with enabled webhook endpoints: wake the event dispatcher (services/webhooks/wake.ts). Not awaited. */
export function wakeDispatchAfterWrites(waker: DispatchWaker): MiddlewareHandler {
  return async (c, next) => {
    await next();
    const method = c.req.method;
    if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS' || c.res.status >= 500) return;
    const principal = c.get('principal');
    const accountId = principal?.accountId ?? (principal ? c.req.header('x-account-id') : undefined);
    if (!principal || !accountId) return;
    waker.afterChange({ accountId, livemode: principal.livemode });
  };
}
