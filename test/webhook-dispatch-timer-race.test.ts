/**
 * The webhook dispatcher woken at the moment its own safety-net timer fires (workflows/webhooks.ts).
 *
 * In about one fresh-clone CI run in seven, test/webhooks.test.ts waited for webhooks that never came:
 * the dispatcher was RUNNING, its history ending in WorkflowExecutionSignaled, WorkflowTaskScheduled,
 * WorkflowTaskStarted (repeated for each later wake-up) with no WorkflowTaskCompleted, and events waited
 * in the outbox. The time-skipping test server refuses a workflow task's completion that cancels a timer
 * which fired while that task was in flight ("invalid history builder state for action", sdk-java #2606),
 * and the timer's TimerFired is lost with it: each later task replays to the same refused completion.
 * The dispatcher cancelled its timer whenever a wake-up ended its wait, so a wake-up landing as the timer
 * fired wedged it for good. Here that moment is made on purpose: the wake-up is sent by another process
 * while this one (and the worker in it) is held until the timer has fired, so the wake-up's workflow task
 * is started and completes only after the timer fired.
 */
import { execFileSync } from 'node:child_process';

import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { eventDispatchWorkflowId } from '../services/webhooks/dispatch.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';
import { startWebhookReceiver, type WebhookReceiver } from './helpers/webhook-receiver.ts';

const EventType = temporal.api.enums.v1.EventType;
let engine: TestEngine;
let receiver: WebhookReceiver;

beforeAll(async () => {
  engine = await startTestEngine();
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await engine?.close();
});

/** Sends the dispatcher a wake-up from a process of its own (ADDRESS, WORKFLOW_ID). */
const sendWake = `
import { Client, Connection } from '@temporalio/client';
const connection = await Connection.connect({ address: process.env.ADDRESS });
await new Client({ connection }).workflow.getHandle(process.env.WORKFLOW_ID).signal('wake');
await connection.close();
`;
const ms = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
  Number(t?.seconds ?? 0) * 1000 + Math.floor((t?.nanos ?? 0) / 1e6);

describe('the webhook dispatcher woken as its own timer fires', () => {
  it('makes its next pass and delivers what comes after', async () => {
    // Nothing in the outbox (the sign-up's events): the first pass finds none and waits 2 s.
    await engine.db.orm.em
      .fork()
      .getConnection()
      .execute('update events set dispatched_at = now() where dispatched_at is null');
    const handle = await engine.env.client.workflow.start('eventDispatchWorkflow', {
      workflowId: eventDispatchWorkflowId(engine.taskQueue),
      taskQueue: engine.taskQueue,
      args: [{ idleMs: 1_000, idleMaxMs: 2_000 }],
    });
    const history = async () => (await handle.fetchHistory()).events ?? [];
    const [timer] = await eventually(
      async () => (await history()).filter((e) => e.eventType === EventType.EVENT_TYPE_TIMER_STARTED),
      (timers) => timers.length > 0,
    );
    const due = ms(timer!.eventTime) + ms(timer!.timerStartedEventAttributes!.startToFireTimeout);

    // The worker's poller (its own thread) starts the wake-up's task; its activation waits for this process, held past the timer.
    execFileSync(process.execPath, ['--input-type=module', '-e', sendWake], {
      env: { ...process.env, ADDRESS: engine.env.address, WORKFLOW_ID: handle.workflowId },
    });
    while (Date.now() < due + 500) {
      /* held */
    }

    // The next pass runs (before: the completion was refused and the history stayed at WorkflowTaskStarted).
    const passes = (all: Awaited<ReturnType<typeof history>>) =>
      all.filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED).length;
    const events = await eventually(history, (all) => passes(all) >= 2, 15_000).catch(async () => {
      throw new Error(
        `no pass after the wake-up; the dispatcher's history: ${(await history()).map((e) => EventType[e.eventType!]).join(', ')}`,
      );
    });
    // And the moment was the one meant: the timer was due while the wake-up's task was in flight.
    const signaled = events.findIndex((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED);
    const started = events.findIndex(
      (e, i) => i > signaled && e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
    );
    const completed = events.findIndex(
      (e, i) => i > started && e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    );
    expect(signaled).toBeGreaterThan(0);
    expect(ms(events[started]!.eventTime)).toBeLessThan(due);
    expect(ms(events[completed]!.eventTime)).toBeGreaterThan(due);

    // What comes after is delivered.
    const headers = { ...engine.tenant.headers, 'x-sandbox-mode': 'true' };
    expect(
      (
        await engine.call(
          'POST',
          '/v1/webhooks',
          { url: receiver.url('/after'), events: ['customer.created'] },
          headers,
        )
      ).status,
    ).toBe(201);
    const customer = await engine.call('POST', '/v1/customers', { email: 'after@example.com' }, headers);
    expect(customer.status).toBe(201);
    const [received] = await receiver.waitFor(1, (r) => r.path === '/after');
    expect(JSON.parse(received!.body).data.object).toMatchObject({ id: customer.body.id });
    expect((await handle.describe()).status.name).toBe('RUNNING');
  });
});
