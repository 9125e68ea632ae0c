import { bodyLimit } from 'hono/body-limit';
import { requestId } from 'hono/request-id';
import { secureHeaders } from 'hono/secure-headers';
import type { ApiDeps } from './deps.ts';
import { handleError, sendError } from './errors.ts';
import { jsonBodies } from './middleware/body.ts';
import { requestLogging } from './middleware/logging.ts';
import { newOpenApiApp } from './openapi-app.ts';
import { customersApp } from './routes/customers.ts';
import { docsApp } from './routes/docs.ts';
import { healthApp } from './routes/health.ts';
import { plansApp } from './routes/plans.ts';
import { subscriptionsApp } from './routes/subscriptions.ts';

/** The whole HTTP API: one sub-app per resource, one error handler, one OpenAPI document. */
export function createApp(deps: ApiDeps) {
  const app = newOpenApiApp();
  app.use(requestId());
  app.use(requestLogging(deps.logger));
  app.use(secureHeaders({ contentSecurityPolicy: undefined }));
  app.use(
    bodyLimit({
      maxSize: deps.config.bodyLimitBytes,
      onError: (c) => sendError(c, 'payload_too_large', `Request bodies are limited to ${deps.config.bodyLimitBytes} bytes.`),
    }),
  );
  app.use('/v1/*', jsonBodies());

  app.route('/health', healthApp(deps));
  app.route('/v1/customers', customersApp(deps));
  app.route('/v1/plans', plansApp(deps));
  app.route('/v1/subscriptions', subscriptionsApp(deps));

  app.doc31('/openapi.json', {
    openapi: '3.1.0',
    info: {
      title: 'Billing engine API',
      version: '1',
      description: 'Recurring billing and payments on Temporal workflows. Errors are `{ "error": "<code>", "message": "..." }`.',
    },
  });
  app.route('/docs', docsApp());

  app.notFound((c) => sendError(c, 'not_found', `No route for ${c.req.method} ${c.req.path}.`));
  app.onError((error, c) => handleError(error, c, deps.logger));
  return app;
}

export type App = ReturnType<typeof createApp>;
