import type { MiddlewareHandler } from 'hono';
import { ApiError } from '../../domain/errors.ts';

const methodsWithBody = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

const maxDepth = 32;

/**
 * Why a parsed JSON value is refused, or null: a NUL character anywhere (PostgreSQL
 * text cannot hold one) or nesting deeper than any endpoint takes. Iterative, so a
 * hostile body of ten thousand brackets cannot overflow the stack.
 */
function bodyProblem(root: unknown): string | null {
  const stack: [unknown, number][] = [[root, 0]];
  while (stack.length) {
    const [value, depth] = stack.pop()!;
    if (depth > maxDepth) return `JSON nested deeper than ${maxDepth} levels.`;
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return 'Strings may not contain NUL characters.';
    } else if (value !== null && typeof value === 'object') {
      for (const [key, inner] of Object.entries(value)) {
        if (key.includes('\u0000')) return 'Strings may not contain NUL characters.';
        stack.push([inner, depth + 1]);
      }
    }
  }
  return null;
}

/**
 * Every request body must be JSON (an empty body is allowed: endpoints whose
 * parameters are all optional). Refuses other content types with 415, malformed
 * JSON with 400, and NUL characters or absurd nesting with 400, all before
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
    const problem = bodyProblem(parsed);
    if (problem) throw new ApiError('invalid_request', problem);
    return next();
  };
}
