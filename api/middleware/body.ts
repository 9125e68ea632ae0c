import type { MiddlewareHandler } from 'hono';
import { ApiError } from '../../domain/errors.ts';

const methodsWithBody = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Every request body must be JSON (an empty body is allowed: endpoints whose
 * parameters are all optional). Refuses other content types with 415 and
 * malformed JSON with 400, both before any handler runs, so nothing changes.
 */
export function jsonBodies(): MiddlewareHandler {
  return async (c, next) => {
    if (!methodsWithBody.has(c.req.method)) return next();
    const length = c.req.header('content-length');
    const hasBody = (length !== undefined && length !== '0') || c.req.header('transfer-encoding') !== undefined;
    if (!hasBody) return next();
    const type = (c.req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/json' && !type.endsWith('+json')) {
      throw new ApiError('unsupported_media_type', `Content-Type must be application/json, got "${type || 'none'}".`);
    }
    const text = await c.req.text();
    if (text.trim() === '') return next();
    try {
      JSON.parse(text);
    } catch (error) {
      throw new ApiError('invalid_request', `Malformed JSON body: ${(error as Error).message}`);
    }
    return next();
  };
}
