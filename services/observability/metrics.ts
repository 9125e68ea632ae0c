/**
 * The engine's Prometheus metrics (prom-client), one registry per process: the API's and the worker's counters
 * live here, and a process serves them on METRICS_PORT (services/observability/metrics-server.ts). The list, with
 * what each means and the alerts on them, is docs/operations.md#metrics.
 *
 * The hot path only counts: a counter's inc or a histogram's observe is a few map lookups, no I/O. The one
 * metric that needs the database (the outbox backlog) is computed when Prometheus scrapes, by one indexed query.
 * Labels are bounded sets (route patterns, outcomes, modes), never ids.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export const metricsRegistry = new Registry();

/** Seconds; from a fast read (5 ms) to a slow write that waits on Temporal (10 s). */
const latencyBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const httpRequests = new Counter({
  name: 'billing_http_requests_total',
  help: 'HTTP requests answered by the API, by method, route pattern (/v1/customers/:id) and status code.',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [metricsRegistry],
});

export const httpRequestDuration = new Histogram({
  name: 'billing_http_request_duration_seconds',
  help: 'Time to answer an HTTP request, by method, route pattern and status class (2xx, 4xx, 5xx).',
  labelNames: ['method', 'route', 'status_class'] as const,
  buckets: latencyBuckets,
  registers: [metricsRegistry],
});

export const charges = new Counter({
  name: 'billing_charges_total',
  help: 'Charge attempts the processor answered, by what was charged (invoice: subscriptions and one-off invoices; payment_request), outcome (succeeded, failed) and mode.',
  labelNames: ['kind', 'outcome', 'livemode'] as const,
  registers: [metricsRegistry],
});

export const renewals = new Counter({
  name: 'billing_renewals_total',
  help: 'Billing cycles of subscriptions run (the first and every renewal), by cycle (first, renewal) and outcome (paid, free, unpaid).',
  labelNames: ['cycle', 'outcome'] as const,
  registers: [metricsRegistry],
});

export const dunningSteps = new Counter({
  name: 'billing_dunning_steps_total',
  help: 'Steps of failed-payment handling: started (a billing charge failed), retry_failed, recovered, ended_canceled, ended_paused.',
  labelNames: ['step'] as const,
  registers: [metricsRegistry],
});

export const webhookDeliveries = new Counter({
  name: 'billing_webhook_delivery_attempts_total',
  help: 'Webhook delivery attempts recorded, by outcome (succeeded, failed).',
  labelNames: ['outcome'] as const,
  registers: [metricsRegistry],
});

export const webhookDeliveryLag = new Histogram({
  name: 'billing_webhook_delivery_lag_seconds',
  help: 'From an event being recorded to its successful delivery to an endpoint (events on test clocks are left out).',
  buckets: [0.1, 0.5, 1, 2.5, 5, 15, 60, 300, 1800, 3600, 21600, 86400],
  registers: [metricsRegistry],
});

export const idempotencyConflicts = new Counter({
  name: 'billing_idempotency_conflicts_total',
  help: 'Requests refused over their Idempotency-Key: in_progress (the first is still running) or reused (a different request).',
  labelNames: ['reason'] as const,
  registers: [metricsRegistry],
});

/** What the outbox holds when scraped: events no dispatcher pass has settled yet. */
export interface OutboxState {
  /** Undispatched events (counted up to a cap, so a huge backlog costs a bounded scan). */
  backlog: number;
  /** Age of the oldest undispatched event in seconds, 0 when none. */
  oldestAgeSeconds: number;
}

let outboxProbe: (() => Promise<OutboxState>) | undefined;

/** The scrape-time reader of the outbox (services/observability/outbox-probe.ts), set by a process that has a database. */
export function setOutboxProbe(probe: () => Promise<OutboxState>): void {
  outboxProbe = probe;
}

/** One probe per scrape, shared by the two gauges that read it. */
let pendingProbe: Promise<OutboxState | undefined> | undefined;
function probeOnce(): Promise<OutboxState | undefined> {
  if (!outboxProbe) return Promise.resolve(undefined);
  pendingProbe ??= outboxProbe()
    .catch(() => undefined)
    .finally(() => setTimeout(() => (pendingProbe = undefined), 0));
  return pendingProbe;
}

new Gauge({
  name: 'billing_outbox_backlog',
  help: 'Events recorded and not yet dispatched to webhooks (counted when scraped, up to 100000).',
  registers: [metricsRegistry],
  async collect() {
    const state = await probeOnce();
    if (state) this.set(state.backlog);
  },
});

new Gauge({
  name: 'billing_outbox_oldest_age_seconds',
  help: 'Age of the oldest event not yet dispatched (0 when none): the outbox lag.',
  registers: [metricsRegistry],
  async collect() {
    const state = await probeOnce();
    if (state) this.set(state.oldestAgeSeconds);
  },
});

let processMetrics = false;
/** Node's own metrics (CPU, memory, event loop lag, GC), once per process, when it starts serving metrics. */
export function collectProcessMetrics(): void {
  if (processMetrics) return;
  processMetrics = true;
  collectDefaultMetrics({ register: metricsRegistry });
}

/** The exposition text of this process's metrics. */
export function renderMetrics(): Promise<string> {
  return metricsRegistry.metrics();
}
