import path from 'node:path';

import { availabilityOverrideSeconds } from './domain/balance-availability.ts';
import { maxRenewalSpreadMinutes } from './domain/renewal-spread.ts';
import { allowEntryProblem, type WebhookUrlPolicy } from './domain/webhook-url.ts';

/**
 * Configuration from the environment, read in one place. Every variable is
 * documented in the README; defaults are for local development.
 */
export interface Config {
  env: 'development' | 'test' | 'production';
  port: number;
  /** Base URL that links in emails and pages point at. */
  publicUrl: string;
  /** Where `npm start` keeps the embedded PostgreSQL and Temporal data. */
  dataDir: string;
  /** Unset: `npm start` runs an embedded PostgreSQL. */
  databaseUrl: string | undefined;
  /** Unset: `npm start` runs a Temporal dev server. */
  temporalAddress: string | undefined;
  temporalNamespace: string;
  taskQueue: string;
  /**
   * TEMPORAL_CLOCK_TASK_QUEUE (default `<TEMPORAL_TASK_QUEUE>-clocks`): the task queue of test clock work (every
   * workflow bound to a test clock, the clock's own, and their activities), served by the worker process's second
   * Worker with modest limits, so an advance never holds a slot live traffic waits for (docs/scaling.md#test-clocks).
   */
  clockTaskQueue: string;
  /**
   * TEST_CLOCK_WORKER_CACHE (default 300): the workflows the test clock queue's Worker keeps cached (worker.ts
   * clockWorkerDefaults). Each costs about 0.3 MB of the worker process's RSS while cached; fewer make a large advance
   * rebuild its workflows from their histories (1,000 made an advance of 1,000 trials about 45% faster;
   * docs/scaling.md#test-clocks).
   */
  clockWorkerCachedWorkflows: number;
  /** Test clock limits (docs/testing-your-integration.md#limits). */
  testClocks: TestClockLimits;
  /**
   * EXPORTS_TASK_QUEUE: the task queue of the export activity (the heavy, file-writing part of an export;
   * docs/exports-and-search.md). Unset (or equal to TEMPORAL_TASK_QUEUE): the workflows' queue, so every worker
   * writes exports. Set it to give exports workers of their own (`npm run worker:exports`, export-worker.ts).
   */
  exportsTaskQueue: string | undefined;
  /** WORKER_EXPORTS=false: with EXPORTS_TASK_QUEUE set, `npm run worker` leaves exports to dedicated exports workers. */
  workerExports: boolean;
  logLevel: string;
  /** Largest request body the API reads, in bytes. */
  bodyLimitBytes: number;
  /** How long a request holds its Idempotency-Key (renewed while it runs); a key whose holder died is taken over this soon. */
  idempotencyLeaseMs: number;
  /** Unset: emails are written as .eml files to DATA_DIR/mail (development). */
  smtpUrl: string | undefined;
  /** The From header of every email. */
  mailFrom: string;
  auth: AuthConfig;
  processors: ProcessorsConfig;
  /**
   * Where sandbox webhook endpoints may point (docs/security.md): development and test allow loopback
   * and private networks; production follows live's rules except WEBHOOK_ALLOWED_PRIVATE_HOSTS.
   */
  webhookUrlPolicy: WebhookUrlPolicy;
  /** Unauthenticated sign-ups (POST /v1/accounts) allowed per client IP per hour, per API process. */
  signupsPerIpPerHour: number;
  /**
   * RENEWAL_SPREAD_MINUTES (0: off, at most 720): calendar renewals wake at the boundary plus a stable
   * per-subscription offset in this window. The API gives it to subscriptions it creates; the worker hands it to
   * running ones at each renewal, for their next ones (docs/scaling.md#renewal-spreading).
   */
  renewalSpreadMinutes: number;
  /**
   * WORKER_HEALTH_PORT: the port of a worker process's `GET /health` (worker.ts, export-worker.ts;
   * services/platform/worker-health.ts). Unset: none is served.
   */
  workerHealthPort: number | undefined;
  /**
   * METRICS_PORT: the port of `npm start`'s Prometheus `GET /metrics`; the API, the worker and the exports worker
   * each take their own port from it or from their own setting (services/observability/metrics-ports.ts). Unset: none is served.
   */
  metricsPort: number | undefined;
  /**
   * TEMPORAL_METRICS_ADDRESS (host:port): where a worker process's Temporal SDK serves its own worker metrics
   * (its runtime's Prometheus exporter), appended to the worker's /metrics. Default with METRICS_PORT set:
   * 127.0.0.1:<METRICS_PORT + 1> for `npm start` (a worker process: its own metrics port + 1, metrics-ports.ts).
   * Unset without METRICS_PORT: the SDK exports no metrics.
   */
  temporalMetricsAddress: string | undefined;
  /**
   * OTEL_EXPORTER_OTLP_ENDPOINT (http://collector:4318): turns OpenTelemetry traces on, sent over OTLP/HTTP
   * (services/observability/tracing.ts). Unset: tracing is off and costs nothing.
   */
  otlpEndpoint: string | undefined;
  /**
   * METRICS_PORT, each process's own port setting (API_METRICS_PORT, WORKER_METRICS_PORT,
   * EXPORTS_WORKER_METRICS_PORT) and TEMPORAL_METRICS_ADDRESS as set, from which
   * services/observability/metrics-ports.ts places each process's listeners.
   */
  metricsPortSettings: MetricsPortSettings;
  /**
   * BALANCE_AVAILABILITY_DELAY_SECONDS: how long every payment's money stays pending, over the processors' own
   * delays (domain/balance-availability.ts). Unset: null, each processor's delay.
   */
  balanceAvailabilityDelaySeconds: number | null;
  /** USAGE_RETENTION_DAYS (default 400, at least 35): how long meter events are kept (services/usage/partitions.ts). */
  usageRetentionDays: number;
}

/** The metrics port settings as set (services/observability/metrics-ports.ts reads them). */
export interface MetricsPortSettings {
  /** METRICS_PORT. */
  metricsPort: number | undefined;
  /** API_METRICS_PORT. */
  api: number | undefined;
  /** WORKER_METRICS_PORT. */
  worker: number | undefined;
  /** EXPORTS_WORKER_METRICS_PORT. */
  'exports-worker': number | undefined;
  /** TEMPORAL_METRICS_ADDRESS as set (unlike Config.temporalMetricsAddress, no default from METRICS_PORT). */
  temporalMetricsAddress: string | undefined;
}

export type ProcessorName = 'sandbox' | 'stripe';

/** How much a sandbox may put on test clocks (docs/testing-your-integration.md#limits). */
export interface TestClockLimits {
  /** TEST_CLOCKS_PER_ACCOUNT (default 100, as Stripe): clocks an account may have at once. */
  perAccount: number;
  /** TEST_CLOCK_CUSTOMERS (default 3, as Stripe): customers on one clock. */
  customersPerClock: number;
  /** TEST_CLOCK_SUBSCRIPTIONS (default 3, as Stripe): subscriptions not canceled of one customer on a clock. */
  subscriptionsPerCustomer: number;
  /** TEST_CLOCK_PAYMENT_REQUESTS (default 10): payment requests (one-time and recurring) on one clock. */
  paymentRequestsPerClock: number;
}

export const defaultTestClockLimits: TestClockLimits = {
  perAccount: 100,
  customersPerClock: 3,
  subscriptionsPerCustomer: 3,
  paymentRequestsPerClock: 10,
};

function testClockLimits(env: NodeJS.ProcessEnv): TestClockLimits {
  const positive = (name: string, fallback: number) => {
    const value = integer(name, fallback, env);
    if (value < 1) throw new ConfigError(`${name} must be at least 1, got "${env[name]}".`);
    return value;
  };
  return {
    perAccount: positive('TEST_CLOCKS_PER_ACCOUNT', defaultTestClockLimits.perAccount),
    customersPerClock: positive('TEST_CLOCK_CUSTOMERS', defaultTestClockLimits.customersPerClock),
    subscriptionsPerCustomer: positive('TEST_CLOCK_SUBSCRIPTIONS', defaultTestClockLimits.subscriptionsPerCustomer),
    paymentRequestsPerClock: positive('TEST_CLOCK_PAYMENT_REQUESTS', defaultTestClockLimits.paymentRequestsPerClock),
  };
}

/** TEST_CLOCK_WORKER_CACHE's default (worker.ts clockWorkerDefaults says why). */
export const clockWorkerCacheDefault = 300;

/** TEMPORAL_CLOCK_TASK_QUEUE: a queue of its own, not the live or the exports queue. */
function clockTaskQueue(env: NodeJS.ProcessEnv, taskQueue: string, exportsTaskQueue: string | undefined): string {
  const queue = env.TEMPORAL_CLOCK_TASK_QUEUE || `${taskQueue}-clocks`;
  if (queue === taskQueue || queue === exportsTaskQueue) {
    throw new ConfigError(
      `TEMPORAL_CLOCK_TASK_QUEUE must differ from TEMPORAL_TASK_QUEUE and EXPORTS_TASK_QUEUE (test clock work runs apart from live work), got "${queue}".`,
    );
  }
  return queue;
}

export interface StripeModeConfig {
  secretKey: string;
  webhookSecret: string;
}

/** Which payment processor each mode charges through (docs/processors.md). */
export interface ProcessorsConfig {
  /** LIVE_PROCESSOR (default sandbox; production refuses sandbox unless ALLOW_SANDBOX_LIVE=true). */
  live: ProcessorName;
  /** SANDBOX_PROCESSOR: the processor of test mode (default sandbox). */
  test: ProcessorName;
  /** STRIPE_SECRET_KEY_LIVE / STRIPE_WEBHOOK_SECRET_LIVE and the _TEST pair; null when unset. */
  stripe: { live: StripeModeConfig | null; test: StripeModeConfig | null; apiBase: string | undefined };
  /** ALLOW_SANDBOX_LIVE=true: production may run live mode on the sandbox (demos; no real money moves). */
  allowSandboxLive: boolean;
}

export interface AuthConfig {
  /** HMAC key for access tokens. Development has a fixed, documented default; production must set AUTH_SECRET. */
  secret: string;
  accessTokenTtlSeconds: number;
  refreshTokenTtlSeconds: number;
  adminEmail: string;
  adminPassword: string;
  /** POST /v1/accounts without a token (public sign-up). */
  signupEnabled: boolean;
  /** Failed logins allowed per email, and per IP, in the throttle window before 429. */
  maxFailedLoginsPerEmail: number;
  maxFailedLoginsPerIp: number;
  loginThrottleWindowSeconds: number;
  /** Read the client IP from X-Forwarded-For (only behind a proxy you run). */
  trustProxy: boolean;
}

/** Development defaults, printed in the README. Never used when NODE_ENV=production. */
export const developmentAuthDefaults = {
  secret: 'development-only-secret-do-not-use-in-production',
  adminEmail: 'admin@example.com',
  adminPassword: 'Admin!2345',
};

/** Where a Docker Compose deployment sets what production requires (docker-compose.yml reads .env). */
export const composeHint =
  'With Docker Compose, set these in .env (cp .env.example .env, then fill it in; docs/operations.md#docker-compose).';

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

function processorName(name: string, env: NodeJS.ProcessEnv): ProcessorName {
  const raw = env[name] || 'sandbox';
  if (raw !== 'sandbox' && raw !== 'stripe') throw new ConfigError(`${name} must be sandbox or stripe, got "${raw}".`);
  return raw;
}

function loadProcessorsConfig(env: NodeJS.ProcessEnv, production: boolean): ProcessorsConfig {
  const live = processorName('LIVE_PROCESSOR', env);
  const test = processorName('SANDBOX_PROCESSOR', env);
  const stripeMode = (suffix: 'LIVE' | 'TEST'): StripeModeConfig | null => {
    const secretKey = env[`STRIPE_SECRET_KEY_${suffix}`];
    const webhookSecret = env[`STRIPE_WEBHOOK_SECRET_${suffix}`];
    return secretKey && webhookSecret ? { secretKey, webhookSecret } : null;
  };
  const stripe = { live: stripeMode('LIVE'), test: stripeMode('TEST'), apiBase: env.STRIPE_API_BASE || undefined };
  if (live === 'stripe' && !stripe.live)
    throw new ConfigError('LIVE_PROCESSOR=stripe needs STRIPE_SECRET_KEY_LIVE and STRIPE_WEBHOOK_SECRET_LIVE.');
  if (test === 'stripe' && !stripe.test)
    throw new ConfigError('SANDBOX_PROCESSOR=stripe needs STRIPE_SECRET_KEY_TEST and STRIPE_WEBHOOK_SECRET_TEST.');
  const allowSandboxLive = env.ALLOW_SANDBOX_LIVE === 'true';
  if (production && live === 'sandbox' && !allowSandboxLive) {
    throw new ConfigError(
      'Live mode would charge through the sandbox processor (no real money moves) with NODE_ENV=production. Set LIVE_PROCESSOR=stripe with STRIPE_SECRET_KEY_LIVE and STRIPE_WEBHOOK_SECRET_LIVE, or ALLOW_SANDBOX_LIVE=true for a demo. ' +
        composeHint,
    );
  }
  return { live, test, stripe, allowSandboxLive };
}

function integer(name: string, fallback: number, env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return value;
}

/** The webhook address policy from NODE_ENV and WEBHOOK_ALLOWED_PRIVATE_HOSTS (comma-separated host names, IPs, CIDRs). */
export function webhookUrlPolicyFromEnv(env: NodeJS.ProcessEnv = process.env): WebhookUrlPolicy {
  const allowedPrivateHosts = (env.WEBHOOK_ALLOWED_PRIVATE_HOSTS ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  for (const entry of allowedPrivateHosts) {
    const problem = allowEntryProblem(entry);
    if (problem) throw new ConfigError(`WEBHOOK_ALLOWED_PRIVATE_HOSTS: ${problem}.`);
  }
  return { sandboxPrivateNetworks: env.NODE_ENV !== 'production', allowedPrivateHosts };
}

/** The longest an event can be late (35 days): its identifier must be remembered at least that long. */
export const minUsageRetentionDays = 35;
export const defaultUsageRetentionDays = 400;

/** USAGE_RETENTION_DAYS: how long meter events are kept, in days (default 400, at least 35). */
export function usageRetentionDays(env: NodeJS.ProcessEnv): number {
  const raw = env.USAGE_RETENTION_DAYS;
  if (raw === undefined || raw === '') return defaultUsageRetentionDays;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < minUsageRetentionDays || value > 36_500)
    throw new Error(`USAGE_RETENTION_DAYS must be an integer from ${minUsageRetentionDays} to 36500, not ${raw}`);
  return value;
}

/** RENEWAL_SPREAD_MINUTES: an integer from 0 (off, the default) to maxRenewalSpreadMinutes. */
function renewalSpreadMinutes(env: NodeJS.ProcessEnv): number {
  const raw = env.RENEWAL_SPREAD_MINUTES;
  if (raw === undefined || raw.trim() === '') return 0;
  const value = Number(raw);
  if (!/^\s*\d+\s*$/.test(raw) || !Number.isInteger(value) || value > maxRenewalSpreadMinutes) {
    throw new ConfigError(
      `RENEWAL_SPREAD_MINUTES must be a whole number of minutes from 0 (off) to ${maxRenewalSpreadMinutes}, got "${raw}".`,
    );
  }
  return value;
}

function portSetting(name: string, env: NodeJS.ProcessEnv): number | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new ConfigError(`${name} must be a port (0-65535), got "${raw}".`);
  return port;
}

/** The metrics port settings of an environment (each a port from 0 to 65535 when set). */
export function readMetricsPortSettings(env: NodeJS.ProcessEnv): MetricsPortSettings {
  return {
    metricsPort: portSetting('METRICS_PORT', env),
    api: portSetting('API_METRICS_PORT', env),
    worker: portSetting('WORKER_METRICS_PORT', env),
    'exports-worker': portSetting('EXPORTS_WORKER_METRICS_PORT', env),
    temporalMetricsAddress: env.TEMPORAL_METRICS_ADDRESS?.trim() || undefined,
  };
}

/** METRICS_PORT, TEMPORAL_METRICS_ADDRESS and OTEL_EXPORTER_OTLP_ENDPOINT (docs/operations.md#metrics, #traces). */
function observabilityConfig(
  env: NodeJS.ProcessEnv,
): Pick<Config, 'metricsPort' | 'temporalMetricsAddress' | 'otlpEndpoint'> {
  const metricsPort = env.METRICS_PORT ? integer('METRICS_PORT', 0, env) : undefined;
  const address = env.TEMPORAL_METRICS_ADDRESS?.trim() || (metricsPort ? `127.0.0.1:${metricsPort + 1}` : undefined);
  if (address && !/^[^\s:]+:\d{1,5}$/.test(address))
    throw new ConfigError(`TEMPORAL_METRICS_ADDRESS must be host:port (127.0.0.1:9465), got "${address}".`);
  const otlpEndpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || undefined;
  if (otlpEndpoint && !/^https?:\/\//.test(otlpEndpoint))
    throw new ConfigError(
      `OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL (http://collector:4318), got "${otlpEndpoint}".`,
    );
  return { metricsPort, temporalMetricsAddress: address, otlpEndpoint };
}

export function loadConfig(env = process.env): Config {
  const mode = env.NODE_ENV === 'production' ? 'production' : env.NODE_ENV === 'test' ? 'test' : 'development';
  const port = integer('PORT', 3000, env);
  const production = mode === 'production';
  if (production) {
    const missing = ['AUTH_SECRET', 'ADMIN_EMAIL', 'ADMIN_PASSWORD'].filter((name) => !env[name]);
    if (missing.length)
      throw new ConfigError(`${missing.join(', ')} must be set when NODE_ENV=production. ${composeHint}`);
    if (env.AUTH_SECRET!.length < 32)
      throw new ConfigError(`AUTH_SECRET must be at least 32 characters. ${composeHint}`);
  }
  const processors = loadProcessorsConfig(env, production);
  const taskQueue = env.TEMPORAL_TASK_QUEUE ?? 'billing';
  const exportsTaskQueue =
    env.EXPORTS_TASK_QUEUE && env.EXPORTS_TASK_QUEUE !== taskQueue ? env.EXPORTS_TASK_QUEUE : undefined;
  return {
    env: mode,
    port,
    publicUrl: (env.PUBLIC_URL ?? `http://localhost:${port}`).replace(/\/$/, ''),
    dataDir: path.resolve(env.DATA_DIR ?? 'data'),
    databaseUrl: env.DATABASE_URL || undefined,
    temporalAddress: env.TEMPORAL_ADDRESS || undefined,
    temporalNamespace: env.TEMPORAL_NAMESPACE ?? 'default',
    taskQueue,
    clockTaskQueue: clockTaskQueue(env, taskQueue, exportsTaskQueue),
    clockWorkerCachedWorkflows: integer('TEST_CLOCK_WORKER_CACHE', clockWorkerCacheDefault, env),
    testClocks: testClockLimits(env),
    workerExports: env.WORKER_EXPORTS !== 'false',
    exportsTaskQueue,
    logLevel: env.LOG_LEVEL ?? (mode === 'test' ? 'warn' : 'info'),
    bodyLimitBytes: integer('BODY_LIMIT_BYTES', 100 * 1024, env),
    idempotencyLeaseMs: Math.max(1000, integer('IDEMPOTENCY_LEASE_MS', 30_000, env)),
    smtpUrl: env.SMTP_URL || undefined,
    mailFrom: env.MAIL_FROM ?? 'Billing <billing@localhost>',
    webhookUrlPolicy: webhookUrlPolicyFromEnv(env),
    signupsPerIpPerHour: integer('SIGNUPS_PER_IP_PER_HOUR', 10, env),
    renewalSpreadMinutes: renewalSpreadMinutes(env),
    workerHealthPort: env.WORKER_HEALTH_PORT ? integer('WORKER_HEALTH_PORT', 0, env) : undefined,
    ...observabilityConfig(env),
    metricsPortSettings: readMetricsPortSettings(env),
    balanceAvailabilityDelaySeconds: availabilityOverrideSeconds(env),
    usageRetentionDays: usageRetentionDays(env),
    auth: {
      secret: env.AUTH_SECRET ?? developmentAuthDefaults.secret,
      accessTokenTtlSeconds: integer('ACCESS_TOKEN_TTL_SECONDS', 15 * 60, env),
      refreshTokenTtlSeconds: integer('REFRESH_TOKEN_TTL_SECONDS', 30 * 24 * 3600, env),
      adminEmail: (env.ADMIN_EMAIL ?? developmentAuthDefaults.adminEmail).toLowerCase(),
      adminPassword: env.ADMIN_PASSWORD ?? developmentAuthDefaults.adminPassword,
      signupEnabled: env.SIGNUP_ENABLED !== 'false',
      maxFailedLoginsPerEmail: integer('LOGIN_MAX_FAILURES_PER_EMAIL', 5, env),
      maxFailedLoginsPerIp: integer('LOGIN_MAX_FAILURES_PER_IP', 20, env),
      loginThrottleWindowSeconds: integer('LOGIN_THROTTLE_WINDOW_SECONDS', 15 * 60, env),
      trustProxy: env.TRUST_PROXY === 'true',
    },
    processors,
  };
}
