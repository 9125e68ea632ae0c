import type { Context } from 'hono';

import type { CommandRetry } from '../services/subscriptions/commands.ts';
import { operationId } from './middleware/idempotency.ts';

/**
 * A command's view of the request's Idempotency-Key (api/middleware/idempotency.ts): whether one was given, whether
 * this request took over a dead one, and the update ids derived from it. Every caller of a subscription command (the
 * API's routes and the customer portal) passes it, so a retried message is never applied twice.
 */
export function commandRetry(c: Context): CommandRetry {
  const idempotency = c.get('idempotency');
  return {
    keyed: idempotency !== undefined,
    takeover: idempotency?.takeover ?? false,
    updateId: (purpose) => operationId(c, purpose),
  };
}
