import type { MiddlewareHandler } from 'hono';
import { ApiError } from '../../domain/errors.ts';

const methodsWithBody = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** True when a NUL character hides anywhere in a parsed JSON value. PostgreSQL text cannot hold one. */
function containsNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (Array.isArray(value)) return value.some(containsNul);
  if (value !== null && typeof value === 'object') return Object.entries(value).some(([key, inner]) => key.includes('\u0000') || containsNul(inner));
  return false;
}

/**
 * Every request body must be JSON (an empty body is allowed: endpoints whose
 * parameters are all optional). Refuses other content types with 415, malformed
 * JSON with 400, and NUL characters in the URL or the body with 400, all before
 * any handler runs, so nothing changes.
 */
export function jsonBodies(): MiddlewareHandler {
  return async (c, next) => {
    if (/%00|\u0000/i.test(c.req.url)) throw new ApiError('invalid_request', 'The URL may not contain NUL characters.');
    if (!methodsWithBody.has(c.req.method)) return next();
    const text = await c.req.text();
    if (text.trim() === '') return next();
    const type = (c.req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/json' && !type.endsWith('+json')) {
      throw new ApiError('unsupported_media_type', `Content-Type must be application/json, got "${type || 'none'}".`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      throw new ApiError('invalid_request', `Malformed JSON body: ${(error as Error).message}`);
    }
    if (containsNul(parsed)) throw new ApiError('invalid_request', 'Strings may not contain NUL characters.');
    return next();
  };
}
