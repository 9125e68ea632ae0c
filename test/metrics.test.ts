import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { freePort } from '../dev/processes.ts';
import { setOutboxProbe } from '../services/observability/metrics.ts';
import { type RunningMetricsServer, startMetricsServer } from '../services/observability/metrics-server.ts';
import { outboxProbe } from '../services/observability/outbox-probe.ts';
import { installTemporalRuntime } from '../worker.ts';
import { seedCustomerAndPlan, startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

/** The sum of a metric's samples whose labels include `labels` (0 when none), from Prometheus exposition text. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const own = Object.fromEntries(
      [...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]),
    );
    if (Object.entries(labels).every(([key, value]) => own[key] === value)) sum += Number(match[3]);
  }
  return sum;
}

/**
 * GET /metrics on METRICS_PORT (services/observability/metrics-server.ts) as a worker process serves it: this
 * process's counters, the outbox read when scraped, and the Temporal SDK's worker metrics from its runtime's
 * Prometheus exporter, over real HTTP after a real renewal in skipped time.
 */
describe('metrics', () => {
  let engine: TestEngine;
  let server: RunningMetricsServer;
  const scrape = async () => {
    const response = await fetch(`http://127.0.0.1:${server.port}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/plain');
    return response.text();
  };

  beforeAll(async () => {
    // Before the engine's: the SDK's metrics need the runtime installed with them, once per process.
    const temporalMetricsAddress = `127.0.0.1:${await freePort()}`;
    installTemporalRuntime('error', { metricsAddress: temporalMetricsAddress });
    engine = await startTestEngine();
    setOutboxProbe(outboxProbe(engine.db.orm));
    server = await startMetricsServer(0, { hostname: '127.0.0.1', temporalMetricsAddress });
  });
  afterAll(async () => {
    await server?.close();
    await engine?.close();
  });

  it('after a renewal, a scrape shows the renewal, its charge, the requests, the outbox and the SDK worker metrics', async () => {
    const before = await scrape();
    const { customerId, planId } = await seedCustomerAndPlan(engine, { amount: 1500, trial_period_days: 0 });
    const created = await engine.call('POST', '/v1/subscriptions', { customer_id: customerId, plan: planId });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    await engine.env.sleep('32 days');
    const invoices = await eventually(
      () => engine.invoices(created.body.id),
      (rows) => rows.length === 2 && rows.every((i) => i.status === 'paid'),
    );
    expect(invoices).toHaveLength(2);
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}) =>
      sample(after, name, labels) - sample(before, name, labels);

    expect(delta('billing_renewals_total', { cycle: 'first', outcome: 'paid' })).toBe(1);
    expect(delta('billing_renewals_total', { cycle: 'renewal', outcome: 'paid' })).toBe(1);
    expect(delta('billing_charges_total', { kind: 'invoice', outcome: 'succeeded', livemode: 'true' })).toBe(2);
    expect(delta('billing_charges_total', { outcome: 'failed' })).toBe(0);
    // Requests by route pattern and status, with their latency.
    expect(delta('billing_http_requests_total', { method: 'POST', route: '/v1/subscriptions', status: '201' })).toBe(1);
    expect(
      delta('billing_http_request_duration_seconds_count', {
        method: 'POST',
        route: '/v1/subscriptions',
        status_class: '2xx',
      }),
    ).toBe(1);
    expect(after).toMatch(
      /^billing_http_request_duration_seconds_bucket\{le="0\.1",method="POST",route="\/v1\/customers",status_class="2xx"\} \d+$/m,
    );
    // The outbox gauges were read at the scrape (the renewal's events are there, dispatched or not).
    expect(after).toMatch(/^billing_outbox_backlog \d+$/m);
    expect(after).toMatch(/^billing_outbox_oldest_age_seconds [\d.e+-]+$/m);
    // Node's own, and the SDK's worker metrics from its runtime (temporal_ names, appended to ours).
    expect(after).toMatch(/^process_cpu_user_seconds_total /m);
    expect(
      sample(after, 'temporal_workflow_task_queue_poll_succeed', { task_queue: engine.taskQueue }),
    ).toBeGreaterThan(0);
    expect(sample(after, 'temporal_worker_task_slots_available', { worker_type: 'WorkflowWorker' })).toBeGreaterThan(0);
    expect(sample(after, 'temporal_local_activity_total', { activity_type: 'renewCycle' })).toBeGreaterThanOrEqual(2);
    expect(after).toMatch(/^temporal_workflow_task_execution_latency_bucket\{/m);
  });

  it('counts an unknown path as one bounded route, and an Idempotency-Key reused with another body', async () => {
    const before = await scrape();
    await engine.call('GET', '/v1/no-such-thing-12345');
    const key = `metrics-${Date.now()}`;
    const first = await engine.call('POST', '/v1/customers', { email: 'one@example.com' }, { 'idempotency-key': key });
    const reused = await engine.call('POST', '/v1/customers', { email: 'two@example.com' }, { 'idempotency-key': key });
    expect([first.status, reused.status]).toEqual([201, 422]);
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string>) =>
      sample(after, name, labels) - sample(before, name, labels);
    expect(delta('billing_http_requests_total', { route: 'unmatched', status: '404' })).toBe(1);
    expect(after).not.toContain('no-such-thing-12345');
    expect(delta('billing_idempotency_conflicts_total', { reason: 'reused' })).toBe(1);
    expect(delta('billing_http_requests_total', { method: 'POST', route: '/v1/customers', status: '422' })).toBe(1);
  });

  it('answers only GET /metrics', async () => {
    expect((await fetch(`http://127.0.0.1:${server.port}/`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${server.port}/metrics`, { method: 'POST' })).status).toBe(405);
  });
});
