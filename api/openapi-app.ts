import { OpenAPIHono, type z } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler } from 'hono';

import { dependencyRetryAfterSeconds, unavailableMessage } from '../domain/dependency-errors.ts';
import { ApiError, type ErrorCode } from '../domain/errors.ts';
import { describeZodError, errorBody } from './errors.ts';
import { coerceFormValue, formCoercion } from './middleware/body.ts';

const formType = 'application/x-www-form-urlencoded';

/**
 * An OpenAPIHono whose validation failures answer in the API's error shape
 * (`invalid_request`, 400) instead of zod's default body, and whose JSON-body routes
 * take form bodies too: each such route gets `formCoercion(schema)` as route
 * middleware (a form's strings become the numbers and booleans the schema wants), and
 * its OpenAPI entry lists `application/x-www-form-urlencoded` beside `application/json`.
 * Validation itself is declared for JSON only: the jsonBodies middleware has already
 * rewritten a form into a JSON request by the time the validator runs.
 */
/** A JSON request or response body for createRoute: `{ ...json(Schema) }`. */
export const json = <T extends z.ZodType>(schema: T) => ({ content: { 'application/json': { schema } } });

export function newOpenApiApp() {
  const app = new OpenAPIHono({
    defaultHook: (result, c) => {
      if (!result.success)
        return c.json(errorBody('invalid_request', describeZodError(result.error, result.target)), 400);
    },
  });
  const register = app.openapi;
  app.openapi = ((route, handler, hook) => {
    const body = route.request?.body;
    const media = body?.content?.['application/json'] as { schema?: unknown } | undefined;
    const schema = media?.schema as z.ZodType | undefined;
    if (!body || !schema || !('_zod' in schema)) return register(route, handler, hook);
    const { middleware, hide, ...documented } = route;
    if (!hide) {
      app.openAPIRegistry.registerPath({
        ...documented,
        request: { ...documented.request, body: { ...body, content: { ...body.content, [formType]: { schema } } } },
      });
    }
    const own = middleware === undefined ? [] : Array.isArray(middleware) ? middleware : [middleware];
    return register(
      { ...route, hide: true, middleware: [formCoercion(schema), ...(own as MiddlewareHandler[])] },
      handler,
      hook,
    );
  }) as typeof app.openapi;
  return app;
}

/**
 * A body the endpoint may go without: absent or empty means `{}`, otherwise it is
 * validated like any other (the jsonBodies middleware has already refused anything
 * but JSON and forms, and turned a form into JSON; a form's strings are coerced here).
 */
export async function optionalJsonBody<T extends z.ZodType>(c: Context, schema: T): Promise<z.infer<T>> {
  const text = await c.req.text();
  const value: unknown = text.trim() ? JSON.parse(text) : {};
  const parsed = schema.safeParse(c.get('formBody') ? coerceFormValue(schema, value) : value);
  if (!parsed.success) throw new ApiError('invalid_request', describeZodError(parsed.error));
  return parsed.data;
}

/** The example code shown for each error status: the general code of the status (domain/errors.ts maps codes to statuses). */
const exampleCodes: Record<number, { error: ErrorCode; message: string; description: string }> = {
  400: {
    error: 'invalid_request',
    message: 'limit: must be at most 100',
    description: 'Invalid request (a body, query or path parameter the schema refuses)',
  },
  401: {
    error: 'unauthorized',
    message: 'This endpoint needs Authorization: Bearer <token>.',
    description: 'No, an invalid or an expired credential',
  },
  402: {
    error: 'payment_failed',
    message: 'Your card was declined.',
    description: 'A charge the request needed was declined',
  },
  403: {
    error: 'forbidden',
    message: 'The member role may not do this.',
    description: "The caller's role may not do this",
  },
  404: { error: 'not_found', message: 'No such resource.', description: 'Not found (also an id of the other mode)' },
  409: {
    error: 'conflict',
    message: 'The resource changed; retry.',
    description: 'Conflict with the current state (or a retry while the first request with its Idempotency-Key runs)',
  },
  410: {
    error: 'link_expired',
    message: 'This link expired; ask for a new one.',
    description: 'A signed link past its expiry',
  },
  413: {
    error: 'payload_too_large',
    message: 'Request bodies are limited to 1048576 bytes.',
    description: 'Body too large',
  },
  415: {
    error: 'unsupported_media_type',
    message: 'Content-Type must be application/json or application/x-www-form-urlencoded, got "text/plain".',
    description: 'Body neither JSON nor a form',
  },
  422: {
    error: 'idempotency_key_reused',
    message: 'This Idempotency-Key was used with another request.',
    description: 'Idempotency-Key reused with another body',
  },
  429: {
    error: 'rate_limited',
    message: 'Too many requests. Try again in 60 seconds.',
    description: 'Throttled (Retry-After says when to retry)',
  },
  500: { error: 'internal_error', message: 'Something went wrong on our side.', description: 'Internal error' },
  503: {
    error: 'service_unavailable',
    message: unavailableMessage('database'),
    description:
      'A dependency (the database, Temporal) cannot be reached: the request did not complete; retry it (with the same Idempotency-Key) after Retry-After seconds',
  },
};

interface OperationObject {
  security?: unknown[];
  parameters?: { $ref?: string; in?: string }[];
  requestBody?: unknown;
  responses?: Record<
    string,
    {
      description?: string;
      headers?: Record<string, unknown>;
      content?: Record<string, { schema?: unknown; example?: unknown }>;
    }
  >;
}

const retryAfterHeader = {
  description: 'Seconds to wait before retrying',
  schema: { type: 'integer', example: dependencyRetryAfterSeconds },
};

const errorContent = (status: number) => ({
  'application/json': {
    schema: { $ref: '#/components/schemas/Error' },
    example: { error: exampleCodes[status]!.error, message: exampleCodes[status]!.message },
  },
});

/**
 * The statuses every operation can answer, added to each operation of the generated
 * document so that no route has to list them (route definitions list their own:
 * 402, 403, 404 of a lookup, 409 of a state): 400 (bad parameters, over-long ids,
 * NUL in the URL) and 500/503 everywhere; 401 and 404 (x-account-id of an unknown
 * account) wherever a credential is required; 404 where the path has an id; 413 and
 * 415 on methods that take a body (the body middleware answers them before the
 * route); 409 and 422 on the POSTs that take an Idempotency-Key; 429 everywhere
 * (sign-up and login throttles; a proxy's limits); 401 on public /v1 operations too
 * (a credential sent is checked); 431 everywhere (Node's header size limit). Every error response, listed here
 * or by its route, gets an example whose code belongs to its status.
 */
export function withCommonStatuses<T extends { paths?: object }>(document: T): T {
  for (const [path, item] of Object.entries(
    (document.paths ?? {}) as Record<string, Record<string, OperationObject>>,
  )) {
    for (const [method, operation] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method) || typeof operation !== 'object') continue;
      const responses = (operation.responses ??= {});
      const statuses = new Set([400, 429, 500, 503]);
      const secured = !(Array.isArray(operation.security) && operation.security.length === 0);
      // The credential middleware runs on every /v1 and /api/v1 path: a public operation sent a credential that is not valid is 401 too.
      if (/^\/(api\/)?v1\//.test(path)) statuses.add(401);
      if (secured && /^\/(api\/)?v1\//.test(path)) statuses.add(404);
      if (path.includes('{')) statuses.add(404);
      if (method !== 'get' && method !== 'delete') statuses.add(413).add(415);
      if (method === 'delete' && operation.requestBody) statuses.add(413).add(415);
      if (method === 'post' && operation.parameters?.some((p) => p.$ref === '#/components/parameters/IdempotencyKey'))
        statuses.add(409).add(422);
      for (const status of statuses) {
        if (!responses[status])
          responses[status] = { description: exampleCodes[status]!.description, content: errorContent(status) };
      }
      // A dependency outage (api/errors.ts handleError) says when to retry.
      const unavailable = responses[503];
      if (
        unavailable &&
        (unavailable.content?.['application/json']?.schema as { $ref?: string } | undefined)?.$ref ===
          '#/components/schemas/Error'
      )
        unavailable.headers ??= { 'Retry-After': retryAfterHeader };
      // Node's HTTP server answers it before any route, with an empty body: request line and headers over 16 KB (a long query).
      responses[431] ??= {
        description:
          'Request header fields too large: the request line and headers exceed 16 KB (answered by the HTTP server, empty body)',
      };
      for (const [key, response] of Object.entries(responses)) {
        const status = Number(key);
        if (!(status >= 400) || !exampleCodes[status]) continue;
        const media = response.content?.['application/json'];
        if (!media) response.content = { ...response.content, ...errorContent(status) };
        else if (media.example === undefined) media.example = errorContent(status)['application/json'].example;
        if (!response.description || response.description === 'Error')
          response.description = exampleCodes[status]!.description;
      }
    }
  }
  return document;
}
