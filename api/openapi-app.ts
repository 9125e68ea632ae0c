import { OpenAPIHono, type z } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler } from 'hono';
import { ApiError } from '../domain/errors.ts';
import { errorBody, describeZodError } from './errors.ts';
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
      if (!result.success) return c.json(errorBody('invalid_request', describeZodError(result.error, result.target)), 400);
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
    return register({ ...route, hide: true, middleware: [formCoercion(schema), ...(own as MiddlewareHandler[])] }, handler, hook);
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
