import { OpenAPIHono } from '@hono/zod-openapi';
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
