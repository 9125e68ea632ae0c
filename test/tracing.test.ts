import path from 'node:path';

import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Client } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createApp } from '../api/app.ts';
import { createSecretBox } from '../domain/secret-box.ts';
import { createLogger } from '../logger.ts';
import { localExportStorage } from '../services/exports/storage.ts';
import { sqlSpanAttributes, startTracing, type Tracing } from '../services/observability/tracing.ts';
import { bundleBillingWorkflows, createBillingWorker } from '../worker.ts';
import { seedCustomerAndPlan, startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

/**
 * OpenTelemetry traces (services/observability/tracing.ts), as OTEL_EXPORTER_OTLP_ENDPOINT turns them on, with an
 * in-memory exporter instead of OTLP: a subscription created over HTTP is one trace from the request's span
 * through the Temporal client's update-with-start, the workflow run, the activities it schedules and their SQL.
 * The worker here runs the bundle with the tracing interceptors (bundleBillingWorkflows({ tracing: true })), built
 * once for this file; every other test file runs the shared bundle without them.
 */
describe('tracing', () => {
  const exporter = new InMemorySpanExporter();
  let tracing: Tracing;
  let engine: TestEngine;
  let worker: Worker;
  let run: Promise<void>;
  let tracedApp: ReturnType<typeof createApp>;

  beforeAll(async () => {
    tracing = startTracing({ serviceName: 'billing-test', exporter })!;
    // The bundle with the tracing interceptors, built while the engine starts.
    const [started, workflowBundle] = await Promise.all([
      startTestEngine({ startWorker: false }),
      bundleBillingWorkflows({ tracing: true }),
    ]);
    engine = started;
    const { config, db } = engine;
    worker = await createBillingWorker({
      connection: engine.env.nativeConnection,
      namespace: 'default',
      context: engine.context,
      secretBox: createSecretBox(config.auth.secret),
      exportStorage: localExportStorage(path.join(config.dataDir, 'exports')),
      workflowBundle,
      tracing,
    });
    run = worker.run();
    // The API as api/server.ts builds it with tracing on: the client's interceptor and the request span.
    const temporal = new Client({
      connection: engine.env.connection,
      interceptors: { workflow: tracing.clientInterceptors },
    });
    tracedApp = createApp({ orm: db.orm, temporal, config, logger: createLogger('silent'), tracer: tracing.tracer });
  });
  afterAll(async () => {
    if (worker?.getState() === 'RUNNING') worker.shutdown();
    await run;
    await engine?.close();
    await tracing?.shutdown();
  });

  it('a subscription create is one trace: HTTP request, update-with-start, workflow run, activities, SQL', async () => {
    const { customerId, planId } = await seedCustomerAndPlan(engine, { trial_period_days: 0 });
    exporter.reset();
    const response = await tracedApp.request('/v1/subscriptions', {
      method: 'POST',
      headers: { ...engine.tenant.headers, 'content-type': 'application/json' },
      body: JSON.stringify({ customer_id: customerId, plan: planId }),
    });
    expect(response.status).toBe(201);
    const root = exporter.getFinishedSpans().find((s) => s.name === 'POST /v1/subscriptions')!;
    expect(
      root,
      exporter
        .getFinishedSpans()
        .map((s) => s.name)
        .join(', '),
    ).toBeDefined();
    expect(root.attributes['http.route']).toBe('/v1/subscriptions');
    expect(root.attributes['http.response.status_code']).toBe(201);
    const traceId = root.spanContext().traceId;
    const inTrace = () => exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
    // The workflow's run span lasts as long as the run: cancel the subscription so it ends and is exported (its
    // spans leave the sandbox through a sink after each workflow task).
    const subscriptionId = ((await response.json()) as { id: string }).id;
    expect((await engine.call('POST', `/v1/subscriptions/${subscriptionId}/cancel`, {})).status).toBe(200);
    await engine.env.client.workflow.getHandle(subscriptionId).result();
    const spans = await eventually(
      async () => inTrace(),
      (all) => all.some((s) => s.name === 'RunWorkflow:subscriptionWorkflow'),
    );
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
    const ancestry = (span: ReadableSpan): string[] => {
      const names: string[] = [];
      for (let at: ReadableSpan | undefined = span; at; at = at.parentSpanId ? byId.get(at.parentSpanId) : undefined)
        names.push(at.name);
      return names;
    };
    const activity = spans.find((s) => s.name.startsWith('RunActivity:'))!;
    const chain = ancestry(activity);
    expect(chain.at(-1)).toBe('POST /v1/subscriptions');
    expect(chain).toContain('UpdateWithStartWorkflow:subscriptionCreated');
    expect(chain).toContain('RunWorkflow:subscriptionWorkflow');
    // The activity's statements are its children, with the text and never a value.
    const statements = spans.filter(
      (s) => s.name.startsWith('pg ') && s.parentSpanId === activity.spanContext().spanId,
    );
    expect(statements.length, spans.map((s) => s.name).join(', ')).toBeGreaterThan(0);
    expect(statements[0]!.attributes['db.system']).toBe('postgresql');
    // The request's own statements (authentication, the customer and plan reads) are children of its span too.
    expect(spans.some((s) => s.name.startsWith('pg ') && s.parentSpanId === root.spanContext().spanId)).toBe(true);
    // Nothing of the trace is left without its parent: one tree.
    for (const span of spans)
      if (span !== root) expect(byId.has(span.parentSpanId!), `${span.name} has no parent in the trace`).toBe(true);
  });

  it('SQL spans carry the statement with string literals blanked', () => {
    expect(sqlSpanAttributes("select * from users where email = 'ada@example.com' and id = $1")).toEqual({
      'db.system': 'postgresql',
      'db.operation': 'select',
      'db.statement': "select * from users where email = '?' and id = $1",
    });
  });
});
