import { OpenAPIHono, type z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { ApiError } from '../domain/errors.ts';
import { errorBody, describeZodError } from './errors.ts';

/**
 * An OpenAPIHono whose validation failures answer in the API's error shape
 * (`invalid_request`, 400) instead of zod's default body.
 */
export function newOpenApiApp() {
  return new OpenAPIHono({
    defaultHook: (result, c) => {
      if (!result.success) return c.json(errorBody('invalid_request', describeZodError(result.error)), 400);
    },
  });
}

/**
 * A body the endpoint may go without: absent or empty means `{}`, otherwise it is
 * validated like any other (the jsonBodies middleware has already refused non-JSON).
 */
export async function optionalJsonBody<T extends z.ZodType>(c: Context, schema: T): Promise<z.infer<T>> {
  const text = await c.req.text();
  const parsed = schema.safeParse(text.trim() ? JSON.parse(text) : {});
  if (!parsed.success) throw new ApiError('invalid_request', describeZodError(parsed.error));
  return parsed.data;
}
