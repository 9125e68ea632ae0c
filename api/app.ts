import type { Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { requestId } from 'hono/request-id';
import { secureHeaders } from 'hono/secure-headers';

import { batchBodyLimitBytes } from '../domain/meter-events.ts';
import { composeServiceContext } from '../services/compose.ts';
import { useTaxCalculator } from '../services/invoices/adjustments.ts';
import { registerClockTaskQueue } from '../services/test-clocks/binding.ts';
import { createDispatchWaker } from '../services/webhooks/wake.ts';
import { restrictCliKeys } from './auth/cli-scope.ts';
import { authenticate } from './auth/principal.ts';
import type { ApiDeps, AppDeps } from './deps.ts';
import { handleError, sendError } from './errors.ts';
import { jsonBodies, urlGuard } from './middleware/body.ts';
import { idempotencyKeys } from './middleware/idempotency.ts';
import { requestLogging } from './middleware/logging.ts';
import { httpMetrics, httpTracing } from './middleware/observability.ts';
import { wakeDispatchAfterWrites } from './middleware/webhook-wake.ts';
import { newOpenApiApp, withCommonStatuses } from './openapi-app.ts';
import { billingDetailsPage } from './pages/billing-details.ts';
import { cliApprovePage } from './pages/cli-approve.ts';
import { dashboardPage } from './pages/dashboard.ts';
import { RequestLogBuffer } from './request-log-buffer.ts';
import { accountApp } from './routes/account.ts';
import { accountsApp } from './routes/accounts.ts';
import { apiKeysApp } from './routes/api-keys.ts';
import { authApp } from './routes/auth.ts';
import { balanceApp, balanceTransactionsApp } from './routes/balance.ts';
import { bankAccountsApp } from './routes/bank-accounts.ts';
import { billingAlertsApp } from './routes/billing-alerts.ts';
import { brandingApp, brandingPublicApp } from './routes/branding.ts';
import { cliApp } from './routes/cli.ts';
import { discountsApps } from './routes/coupons.ts';
import { creditNotesApps } from './routes/credit-notes.ts';
import { customerBalanceApp } from './routes/customer-balance.ts';
import { customerPortalApp } from './routes/customer-portal.ts';
import { customersApp } from './routes/customers.ts';
import { docsApp } from './routes/docs.ts';
import { eventsApp } from './routes/events.ts';
import { exportsApps } from './routes/exports.ts';
import { healthApp } from './routes/health.ts';
import { invoiceItemsApp } from './routes/invoice-items.ts';
import { invoicesApps } from './routes/invoices.ts';
import { meterEventsApp } from './routes/meter-events.ts';
import { metersApp } from './routes/meters.ts';
import { notificationSettingsApp } from './routes/notification-settings.ts';
import { oneOffInvoicesApps } from './routes/one-off-invoices.ts';
import { passwordResetApp } from './routes/password-reset.ts';
import { payPageApp } from './routes/pay-page.ts';
import { paymentRequestsApp } from './routes/payment-requests.ts';
import { paymentsApp } from './routes/payments.ts';
import { payoutHoldsApp } from './routes/payout-holds.ts';
import { payoutSettingsApp } from './routes/payout-settings.ts';
import { payoutsApp } from './routes/payouts.ts';
import { plansApp } from './routes/plans.ts';
import { processorWebhooksApp } from './routes/processor-webhooks.ts';
import { productsApp } from './routes/products.ts';
import { reportsApp } from './routes/reports.ts';
import { settingsApp } from './routes/settings.ts';
import { streamsApp } from './routes/streams.ts';
import { subscriptionItemsApps } from './routes/subscription-items.ts';
import { subscriptionsApp } from './routes/subscriptions.ts';
import { customerTaxIdsApp, subscriptionTaxRatesApp, taxRatesApp, taxSettingsApp } from './routes/tax-rates.ts';
import { testClocksApp } from './routes/test-clocks.ts';
import { testHelpersApp } from './routes/test-helpers.ts';
import {
  creditNoteSearchApp,
  customerSearchApp,
  invoiceSearchApp,
  transactionSearchApp,
} from './routes/transaction-search.ts';
import { transactionsApp } from './routes/transactions.ts';
import { usersApp } from './routes/users.ts';
import { webhooksApps } from './routes/webhooks.ts';

/** POST paths whose answers carry a secret: login, refresh, API key creation, webhook endpoint creation and secret rotation. */
const secretBearingPaths = [
  /^\/v1\/auth\/(login|refresh)\/?$/,
  /^\/v1\/api_keys\/?$/,
  /^\/v1\/webhooks\/?$/,
  /^\/v1\/webhooks\/[^/]+\/rotate_secret\/?$/,
];

/** Every POST under /v1 and /api/v1 but login and refresh takes an Idempotency-Key header (api/middleware/idempotency.ts): listed on each. */
function withIdempotencyKeys<T extends { paths?: object }>(document: T): T {
  for (const [path, item] of Object.entries(
    (document.paths ?? {}) as Record<string, { post?: { parameters?: unknown[] } }>,
  )) {
    if (!/^\/(api\/)?v1\//.test(path) || path === '/v1/auth/login' || path === '/v1/auth/refresh' || !item.post)
      continue;
    item.post.parameters = [...(item.post.parameters ?? []), { $ref: '#/components/parameters/IdempotencyKey' }];
  }
  return document;
}

/** A Hono route path (`/v1/customers/:id`, `:id{[0-9]+}`, `*`) as a regular expression over request paths. */
function routePattern(path: string): RegExp {
  let source = '';
  for (const part of path.split(/(:[A-Za-z0-9_]+(?:\{(?:[^{}]|\{[^{}]*\})*\})?\??|\*)/)) {
    if (part === '*') source += '.*';
    else if (part.startsWith(':')) {
      const custom = /\{(.*)\}\??$/.exec(part);
      source += `(?:${custom ? custom[1] : '[^/]+'})${part.endsWith('?') ? '?' : ''}`;
    } else source += part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`);
}

/**
 * Which methods the app's routes take on a path (middleware, registered for every method, does not
 * count): `GET, HEAD, POST` for /v1/customers. Empty for a path no route knows (a 404 then).
 */
export function allowedMethods(routes: readonly { path: string; method: string }[]): (path: string) => string[] {
  const order = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
  const table = new Map<string, { pattern: RegExp; methods: Set<string> }>();
  for (const route of routes) {
    const method = route.method.toUpperCase();
    if (method === 'ALL') continue;
    const entry = table.get(route.path) ?? { pattern: routePattern(route.path), methods: new Set<string>() };
    entry.methods.add(method);
    if (method === 'GET') entry.methods.add('HEAD');
    table.set(route.path, entry);
  }
  const entries = [...table.values()];
  return (path) => {
    const methods = new Set<string>();
    for (const entry of entries) if (entry.pattern.test(path)) for (const method of entry.methods) methods.add(method);
    return [...methods].sort(
      (a, b) => (order.indexOf(a) + 1 || 99) - (order.indexOf(b) + 1 || 99) || a.localeCompare(b),
    );
  };
}

/** The whole HTTP API: one sub-app per resource, one error handler, one OpenAPI document. */
export function createApp(given: ApiDeps) {
  // Workflows this API starts on a test clock go to the clock queue (services/test-clocks/binding.ts).
  if (given.config.clockTaskQueue) registerClockTaskQueue(given.config.taskQueue, given.config.clockTaskQueue);
  // The tax calculator the upcoming invoice and one-off invoices' finalize ask (services/invoices/adjustments.ts).
  useTaxCalculator(given.taxCalculator);
  // The process's services, composed once (services/compose.ts): the entry point's, or composed here (tests).
  const context =
    given.context ??
    composeServiceContext(given.config, {
      orm: given.orm,
      client: given.temporal,
      logger: given.logger,
      ...(given.processors ? { processors: given.processors } : {}),
    });
  const deps: AppDeps = { ...given, context, processors: context.processors };
  const app = newOpenApiApp();
  // The last requests of each account and mode, for GET /v1/logs/stream (billing logs tail).
  const requestLogs = new RequestLogBuffer();
  // Requests by route and status with their latency (billing_http_*), and a span per request when tracing is on.
  app.use(httpMetrics());
  if (deps.tracer) app.use(httpTracing(deps.tracer));
  app.use(requestId());
  app.use(requestLogging(context.logger, requestLogs));
  app.use(urlGuard());
  // A logo is shown by pages and emails of other origins (webmail): it may be loaded cross-origin (set after secureHeaders' same-origin).
  app.use('/branding/*', async (c, next) => {
    await next();
    c.res.headers.set('cross-origin-resource-policy', 'cross-origin');
  });
  app.use(secureHeaders({ contentSecurityPolicy: undefined }));
  const tooLarge = (c: Context) =>
    sendError(c, 'payload_too_large', `Request bodies are limited to ${deps.config.bodyLimitBytes} bytes.`);
  const batchTooLarge = (c: Context) =>
    sendError(c, 'payload_too_large', `A batch of meter events is limited to ${batchBodyLimitBytes} bytes.`);
  const limitBodies = bodyLimit({ maxSize: deps.config.bodyLimitBytes, onError: tooLarge });
  // A batch of meter events (up to 1,000) has its own, larger limit (docs/usage.md#events).
  const limitBatches = bodyLimit({ maxSize: batchBodyLimitBytes, onError: batchTooLarge });
  // GET and HEAD requests carry no body (the Node adapter drops one); asking for it would build a whole Request object per read.
  // A declared Content-Length (not chunked) is checked from the header, as bodyLimit does, but without opening the body as
  // a stream: the Node adapter then reads it straight from the socket (jsonBodies), ~10% of a single meter event's CPU.
  app.use(async (c, next) => {
    if (c.req.method === 'GET' || c.req.method === 'HEAD') return next();
    const batch = c.req.path === '/v1/meter_events/batch';
    const length = c.req.header('content-length');
    if (length === undefined || c.req.header('transfer-encoding') !== undefined)
      return batch ? limitBatches(c, next) : limitBodies(c, next);
    if (parseInt(length, 10) > (batch ? batchBodyLimitBytes : deps.config.bodyLimitBytes))
      return batch ? batchTooLarge(c) : tooLarge(c);
    return next();
  });
  // Answers that carry secrets (tokens, API key and webhook secrets) are never stored by a cache.
  app.use('/v1/*', async (c, next) => {
    await next();
    if (c.req.method === 'POST' && secretBearingPaths.some((pattern) => pattern.test(c.req.path)))
      c.header('Cache-Control', 'no-store');
  });
  app.use('/v1/*', jsonBodies());
  app.use('/v1/*', authenticate(context.orm, deps.config.auth));
  // What a CLI key (x-cli-key) may not do, in one place.
  app.use('/v1/*', restrictCliKeys());
  app.use(
    '/v1/*',
    idempotencyKeys(context.orm, { trustProxy: deps.config.auth.trustProxy, leaseMs: deps.config.idempotencyLeaseMs }),
  );
  // After each write on an account with webhook endpoints: wake the event dispatcher (services/webhooks/wake.ts).
  const wake = createDispatchWaker({
    orm: context.orm,
    client: () => context.temporal.client,
    taskQueue: context.temporal.taskQueue,
    onError: (error) =>
      context.logger.warn({ err: error }, 'could not wake the webhook dispatcher; its timer will pick the events up'),
  });
  app.use('/v1/*', wakeDispatchAfterWrites(wake));
  // SPEC.md's POST /api/v1/payment-requests: the same JSON bodies, credentials and Idempotency-Key as /v1.
  app.use('/api/v1/*', jsonBodies());
  app.use('/api/v1/*', authenticate(context.orm, deps.config.auth));
  app.use('/api/v1/*', restrictCliKeys());
  app.use(
    '/api/v1/*',
    idempotencyKeys(context.orm, { trustProxy: deps.config.auth.trustProxy, leaseMs: deps.config.idempotencyLeaseMs }),
  );
  app.use('/api/v1/*', wakeDispatchAfterWrites(wake));
  // SPEC.md's GET /invoices: the invoice list outside /v1, with the same authentication.
  app.use('/invoices', authenticate(context.orm, deps.config.auth));

  app.route('/health', healthApp(deps));
  app.route('/v1/auth', authApp(deps));
  app.route('/v1/auth', passwordResetApp(deps));
  app.route('/v1/accounts', accountsApp(deps));
  app.route('/v1/account', accountApp(deps));
  app.route('/v1/users', usersApp(deps));
  app.route('/v1/api_keys', apiKeysApp(deps));
  // The CLI: device login, CLI keys, whoami; the event and request-log streams (before /v1/events/{id}).
  app.route('/v1', cliApp(deps));
  app.route('/v1', streamsApp(deps, requestLogs));
  app.route('/cli', cliApprovePage(deps));
  // The customer portal's API, portal links and the portal setting (before /v1/customers and /v1/settings).
  app.route('/v1', customerPortalApp(deps));
  app.route('/v1/customers/search', customerSearchApp(deps));
  app.route('/v1/customers', customerBalanceApp(deps));
  // Coupons, promotion codes, and POST/DELETE /v1/customers/{id}/discount and /v1/subscriptions/{id}/discount (before /v1/customers).
  const discounts = discountsApps(deps);
  app.route('/v1/coupons', discounts.coupons);
  app.route('/v1/promotion_codes', discounts.promotionCodes);
  app.route('/v1', discounts.discounts);
  app.route('/v1/customers', customersApp(deps));
  // Taxes: a customer's tax ids, tax rates, a subscription's tax rates and the mode's default rates (api/routes/tax-rates.ts).
  app.route('/v1/customers', customerTaxIdsApp(deps));
  app.route('/v1/tax_rates', taxRatesApp(deps));
  app.route('/v1/products', productsApp(deps));
  app.route('/v1/plans', plansApp(deps));
  app.route('/v1/subscriptions', subscriptionsApp(deps));
  app.route('/v1/subscriptions', subscriptionTaxRatesApp(deps));
  const subscriptionItems = subscriptionItemsApps(deps);
  app.route('/v1/subscription_items', subscriptionItems.items);
  app.route('/v1/test_clocks', testClocksApp(deps));
  // Sandbox test helpers: an export that fails, a clock whose next advance fails (`billing trigger`).
  app.route('/v1/test_helpers', testHelpersApp(deps));
  // Before /v1/settings, whose sub-app answers unknown paths under it.
  app.route('/v1/settings/notifications', notificationSettingsApp(deps));
  app.route('/v1/settings/branding', brandingApp(deps));
  app.route('/v1/settings/tax', taxSettingsApp(deps));
  app.route('/v1/settings', settingsApp(deps));
  // Customer-facing page linked from failed-payment emails; the signed token is the credential.
  app.route('/billing', billingDetailsPage(deps));
  // Before /v1/transactions, whose /{id} would otherwise take `search`.
  app.route('/v1/transactions/search', transactionSearchApp(deps));
  app.route('/v1/transactions', transactionsApp(deps));
  const webhooks = webhooksApps(deps, wake);
  app.route('/v1/webhooks', webhooks.webhooks);
  // POST /v1/events/{id}/redeliver, beside the events routes.
  app.route('/v1/events', webhooks.events);
  app.route('/v1/payments', paymentsApp(deps));
  app.route('/v1/payouts', payoutsApp(deps));
  app.route('/v1/bank_accounts', bankAccountsApp(deps));
  app.route('/v1/payout_holds', payoutHoldsApp(deps));
  app.route('/v1/payout_settings', payoutSettingsApp(deps));
  app.route('/v1/balance', balanceApp(deps));
  app.route('/v1/reports', reportsApp(deps));
  app.route('/v1/balance_transactions', balanceTransactionsApp(deps));
  app.route('/v1/events', eventsApp(deps));
  app.route('/api/v1/payment-requests', paymentRequestsApp(deps));
  // The hosted pay page (payment_url): no API credentials, the token in the link is the credential.
  app.route('/pay', payPageApp(deps));
  app.route('/branding', brandingPublicApp(deps));
  // Processor webhooks (Stripe): the signature over the raw body is the credential.
  app.route('/webhooks', processorWebhooksApp(deps));
  const invoices = invoicesApps(deps);
  // Before /v1/invoices/{id}.
  app.route('/v1/invoices/upcoming', subscriptionItems.upcomingInvoices);
  app.route('/v1/invoices/search', invoiceSearchApp(deps));
  app.route('/v1/invoices', invoices.v1);
  app.route('/invoices', invoices.root);
  const exports = exportsApps(deps);
  app.route('/v1/exports', exports.v1);
  // The signed `url` of an export: no API credentials, the signature is the credential.
  app.route('/exports', exports.root);

  // One-off invoices (create, finalize, pay, delete a draft) and their hosted pay page; invoice items.
  const oneOffInvoices = oneOffInvoicesApps(deps);
  app.route('/v1/invoices', oneOffInvoices.v1);
  app.route('/invoices', oneOffInvoices.root);
  app.route('/v1/invoice_items', invoiceItemsApp(deps));
  // Credit notes, and their signed PDF links outside the API's authentication.
  const creditNotes = creditNotesApps(deps);
  // Before /v1/credit_notes, whose /{id} would otherwise take `search`.
  app.route('/v1/credit_notes/search', creditNoteSearchApp(deps));
  app.route('/v1/credit_notes', creditNotes.v1);
  // Usage-based billing: meters, their events and summaries (docs/usage.md).
  app.route('/v1/meters', metersApp(deps));
  app.route('/v1/meter_events', meterEventsApp(deps));
  app.route('/v1/billing/alerts', billingAlertsApp(deps));
  app.route('/credit_notes', creditNotes.root);
  app.openAPIRegistry.registerComponent('securitySchemes', 'bearer', {
    type: 'http',
    scheme: 'bearer',
    description:
      'An access token from POST /v1/auth/login, or an API key (sk_test_… / sk_live_…; also as HTTP Basic user name with an empty password).',
  });
  app.openAPIRegistry.registerComponent('securitySchemes', 'sandboxMode', {
    type: 'apiKey',
    in: 'header',
    name: 'x-sandbox-mode',
    description:
      'Optional, with a user access token: `true` works in the sandbox (test data), `false` or absent in live mode. API keys carry their mode.',
  });
  app.openAPIRegistry.registerComponent('securitySchemes', 'accountId', {
    type: 'apiKey',
    in: 'header',
    name: 'x-account-id',
    description: 'Platform admin tokens only: the account (acct_…) the request acts on.',
  });
  app.openAPIRegistry.registerComponent('parameters', 'IdempotencyKey', {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    schema: { type: 'string', maxLength: 255 },
    description:
      'Optional, any unique string (a UUID): a retry with the same key and body replays the first answer and changes nothing again (24 hours).',
  });
  app.openAPIRegistry.registerComponent('securitySchemes', 'portalToken', {
    type: 'apiKey',
    in: 'header',
    name: 'x-portal-token',
    description: 'The customer portal only: the token of a portal link (POST /v1/customers/{id}/portal_link).',
  });
  app.openAPIRegistry.registerComponent('securitySchemes', 'cliKey', {
    type: 'apiKey',
    in: 'header',
    name: 'x-cli-key',
    description: 'A CLI key (ck_test_… / ck_live_…) minted by `billing login`; restricted (docs/cli.md).',
  });
  // A bearer credential, with the optional mode and account headers alongside; or a CLI key.
  const security: Record<string, string[]>[] = [
    { bearer: [] },
    { bearer: [], sandboxMode: [] },
    { bearer: [], accountId: [] },
    { bearer: [], sandboxMode: [], accountId: [] },
    { cliKey: [] },
  ];
  const openApiConfig = {
    openapi: '3.1.0',
    security,
    info: {
      title: 'Billing engine API',
      version: '1',
      description:
        'Recurring billing and payments on Temporal workflows. Errors are `{ "error": "<code>", "message": "..." }`.',
    },
  };
  app.get('/openapi.json', (c) =>
    c.json(withCommonStatuses(withIdempotencyKeys(app.getOpenAPI31Document(openApiConfig)))),
  );
  app.route('/docs', docsApp());
  // The owners' dashboard (dashboard/, built by npm start and npm test): a client of this API with a cookie session.
  app.route('/dashboard', dashboardPage());
  // A browser opening the server's root lands on the dashboard.
  app.get('/', (c) =>
    (c.req.header('accept') ?? '').includes('text/html')
      ? c.redirect('/dashboard', 302)
      : c.json({ dashboard: '/dashboard', docs: '/docs', openapi: '/openapi.json', health: '/health' }),
  );

  // A known path asked with a method it does not take (TRACE, PUT, DELETE on a list): 405 with Allow, in the error shape.
  let allowed: ((path: string) => string[]) | undefined;
  app.notFound((c) => {
    allowed ??= allowedMethods(app.routes);
    const methods = allowed(c.req.path);
    if (methods.length === 0 || methods.includes(c.req.method))
      return sendError(c, 'not_found', `No route for ${c.req.method} ${c.req.path}.`);
    c.header('Allow', methods.join(', '));
    return sendError(
      c,
      'method_not_allowed',
      `${c.req.method} is not allowed on ${c.req.path}; it takes ${methods.join(', ')}.`,
    );
  });
  app.onError((error, c) => handleError(error, c, context.logger));
  return app;
}

export type App = ReturnType<typeof createApp>;
