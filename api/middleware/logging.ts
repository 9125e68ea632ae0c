import type { Context, MiddlewareHandler } from 'hono';

import type { Logger } from '../../logger.ts';
import type { RequestLogBuffer, RequestLogLine } from '../request-log-buffer.ts';

/** Who sent a request, as request logs record it: `cli` for x-cli-key callers. */
export function requestSource(c: Context): RequestLogLine['source'] {
  const principal = c.get('principal');
  if (!principal) return 'anonymous';
  return principal.kind === 'cli_key' ? 'cli' : principal.kind === 'api_key' ? 'api_key' : 'session';
}

/**
 * One log line per request, tagged with the request id that the response also carries (X-Request-Id)
 * and its source; requests made in an account also go to that account's live log (GET /v1/logs/stream).
 */
export function requestLogging(logger: Logger, buffer?: RequestLogBuffer): MiddlewareHandler {
  return async (c, next) => {
    const started = performance.now();
    await next();
    const ms = Math.round(performance.now() - started);
    const source = requestSource(c);
    logger.info(
      { requestId: c.get('requestId'), method: c.req.method, path: c.req.path, status: c.res.status, ms, source },
      'request',
    );
    const principal = c.get('principal');
    if (buffer && principal?.accountId && !c.req.path.startsWith('/v1/logs/stream')) {
      buffer.record(principal.accountId, principal.livemode, {
        request_id: c.get('requestId'),
        method: c.req.method,
        path: c.req.path,
        status: c.res.status,
        duration_ms: ms,
        source,
        created_at: new Date().toISOString(),
      });
    }
  };
}
