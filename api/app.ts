import { bodyLimit } from 'hono/body-limit';
import { requestId } from 'hono/request-id';
import { secureHeaders } from 'hono/secure-headers';
import { authenticate } from './auth/principal.ts';
import type { ApiDeps } from './deps.ts';
import { handleError, sendError } from './errors.ts';
import { jsonBodies } from './middleware/body.ts';
import { idempotencyKeys } from './middleware/idempotency.ts';
import { requestLogging } from './middleware/logging.ts';
import { newOpenApiApp } from './openapi-app.ts';
import { accountApp } from './routes/account.ts';
import { accountsApp } from './routes/accounts.ts';
import { apiKeysApp } from './routes/api-keys.ts';
import { authApp } from './routes/auth.ts';
import { customersApp } from './routes/customers.ts';
import { docsApp } from './routes/docs.ts';
import { healthApp } from './routes/health.ts';
import { payPageApp } from './routes/pay-page.ts';
import { paymentRequestsApp } from './routes/payment-requests.ts';
import { paymentsApp } from './routes/payments.ts';
import { invoicesApps } from './routes/invoices.ts';
import { plansApp } from './routes/plans.ts';
import { productsApp } from './routes/products.ts';
import { subscriptionsApp } from './routes/subscriptions.ts';
import { transactionsApp } from './routes/transactions.ts';
import { usersApp } from './routes/users.ts';

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
  app.use('/v1/*', authenticate(deps.orm, deps.config.auth));
  app.use('/v1/*', idempotencyKeys(deps.orm));
  // SPEC.md's POST /api/v1/payment-requests: the same JSON bodies, credentials and Idempotency-Key as /v1.
  app.use('/api/v1/*', jsonBodies());
  app.use('/api/v1/*', authenticate(deps.orm, deps.config.auth));
  app.use('/api/v1/*', idempotencyKeys(deps.orm));
  // SPEC.md's GET /invoices: the invoice list outside /v1, with the same authentication.
  app.use('/invoices', authenticate(deps.orm, deps.config.auth));

  app.route('/health', healthApp(deps));
  app.route('/v1/auth', authApp(deps));
  app.route('/v1/accounts', accountsApp(deps));
  app.route('/v1/account', accountApp(deps));
  app.route('/v1/users', usersApp(deps));
  app.route('/v1/api_keys', apiKeysApp(deps));
  app.route('/v1/customers', customersApp(deps));
  app.route('/v1/products', productsApp(deps));
  app.route('/v1/plans', plansApp(deps));
  app.route('/v1/subscriptions', subscriptionsApp(deps));
  app.route('/v1/transactions', transactionsApp(deps));
  app.route('/v1/payments', paymentsApp(deps));
  app.route('/api/v1/payment-requests', paymentRequestsApp(deps));
  // The hosted pay page (payment_url): no API credentials, the token in the link is the credential.
  app.route('/pay', payPageApp(deps));
  const invoices = invoicesApps(deps);
  app.route('/v1/invoices', invoices.v1);
  app.route('/invoices', invoices.root);

  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', {
    type: 'http',
    scheme: 'bearer',
    description: 'An access token from POST /v1/auth/login, or an API key (sk_test_… / sk_live_…).',
  });
  app.doc31('/openapi.json', {
    openapi: '3.1.0',
    security: [{ bearer: [] }],
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
