import type { MiddlewareHandler } from 'hono';
import type { Logger } from '../../logger.ts';

/** One log line per request, tagged with the request id that the response also carries (X-Request-Id). */
export function requestLogging(logger: Logger): MiddlewareHandler {
  return async (c, next) => {
    const started = performance.now();
    await next();
    logger.info(
      { requestId: c.get('requestId'), method: c.req.method, path: c.req.path, status: c.res.status, ms: Math.round(performance.now() - started) },
      'request',
    );
  };
}
