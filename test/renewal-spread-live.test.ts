import type { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

import { renewalOffsetMs } from '../domain/renewal-spread.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

const minute = 60_000;
const hour = 60 * minute;

/**
 * RENEWAL_SPREAD_MINUTES is read at every renewal, not only at creation: a subscription created while it was off
 * picks the deployment's window up at its next renewal (which was timed before the change, at the boundary) and
 * renews at its own offset from then on; turned off again, the renewal after the next is back at the boundary.
 * In skipped time, on the engine's worker, whose setting a test changes as a redeploy would (engine.config).
 */
describe('renewal spreading picked up by running subscriptions', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  const now = () => engine.env.currentTimeMs();
  async function skipTo(instant: number) {
    const ahead = instant - (await now());
    if (ahead > 0) await engine.env.sleep(ahead);
  }
  const post = async (path: string, body: unknown) => {
    const created = await engine.call('POST', path, body);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body;
  };
  const cycleOf = async (id: string) => (await engine.subscription(id))?.billingCycle;
  const invoiceOf = async (id: string, periodStart: number) =>
    (await engine.invoices(id)).find((i) => i.periodStart.getTime() === periodStart);
  /** When the renewal of `boundary` was paid, relative to the boundary; its invoice is dated at the boundary either way. */
  const paidAfter = async (id: string, boundary: number) => {
    const invoice = (await invoiceOf(id, boundary))!;
    expect(invoice).toMatchObject({ status: 'paid' });
    expect(invoice.createdAt.getTime() - boundary).toBeLessThan(30_000);
    return invoice.paidAt!.getTime() - boundary;
  };

  /** The patch ids a history recorded (its markers). */
  const patches = (history: temporal.api.history.v1.IHistory) =>
    (history.events ?? [])
      .map((e) => e.markerRecordedEventAttributes?.details?.['patch-data']?.payloads?.[0]?.data)
      .filter((data): data is Uint8Array => !!data)
      .map((data) => JSON.parse(Buffer.from(data).toString('utf8')).id as string);

  it('a subscription created with the setting off spreads from its next renewal on once it is set, and stops once it is unset', async () => {
    expect(engine.config.renewalSpreadMinutes).toBe(0);
    const today = new Date(await now());
    await skipTo(Date.UTC(today.getUTCFullYear(), today.getUTCMonth() + 1, 11));
    const start = new Date(await now());
    const boundary = (months: number) => Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + months, 1);
    const plan = (await post('/v1/plans', { name: 'Monthly', amount: 2500, currency: 'USD', interval: 'month' }))
      .id as string;
    // A subscription whose offset in a 60-minute window is well clear of the boundary (ids are random: a few tries at most).
    let id = '';
    for (let i = 0; i < 10 && (i === 0 || renewalOffsetMs(id, 60) < 5 * minute); i++) {
      const customer = (
        await post('/v1/customers', { email: `live-spread${i}@example.com`, payment_method: 'pm_card_visa' })
      ).id as string;
      id = (
        await post('/v1/subscriptions', {
          customer_id: customer,
          plan,
          trial_period_days: 0,
          billing_cycle: 'calendar',
        })
      ).id as string;
    }
    const offset = renewalOffsetMs(id, 60);
    expect(offset).toBeGreaterThanOrEqual(5 * minute);
    const handle = engine.env.client.workflow.getHandle(id);
    const startInput = async () =>
      JSON.parse(
        Buffer.from(
          (await handle.fetchHistory()).events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!.data!,
        ).toString('utf8'),
      );
    expect((await startInput()).renewalSpreadMinutes).toBeUndefined();

    // The deployment sets RENEWAL_SPREAD_MINUTES=60 (the API and the worker read it from now on).
    engine.config.renewalSpreadMinutes = 60;
    // Its next renewal was timed when it was created: at the boundary. It reads the setting.
    await skipTo(boundary(1) + 2 * minute);
    await eventually(
      () => cycleOf(id),
      (c) => c === 1,
    );
    expect(await paidAfter(id, boundary(1))).toBeLessThan(30_000);

    // The one after: at the boundary plus its offset, invoiced at the boundary.
    await skipTo(boundary(2) + offset - 2 * minute);
    expect(await cycleOf(id)).toBe(1);
    await skipTo(boundary(2) + hour + minute);
    await eventually(
      () => cycleOf(id),
      (c) => c === 2,
    );
    const late = await paidAfter(id, boundary(2));
    expect(late - offset).toBeGreaterThanOrEqual(0);
    expect(late - offset).toBeLessThan(30_000);
    expect((await engine.invoices(id)).map((i) => i.status)).toEqual(['paid', 'paid', 'paid']);

    // Unset again: the renewal already timed keeps its offset; the next is back at the boundary.
    engine.config.renewalSpreadMinutes = 0;
    await skipTo(boundary(3) + hour + minute);
    await eventually(
      () => cycleOf(id),
      (c) => c === 3,
    );
    expect((await paidAfter(id, boundary(3))) - offset).toBeGreaterThanOrEqual(0);
    await skipTo(boundary(4) + 2 * minute);
    await eventually(
      () => cycleOf(id),
      (c) => c === 4,
    );
    expect(await paidAfter(id, boundary(4))).toBeLessThan(30_000);

    // Set once more, past a continue-as-new (a run renews in place up to 12 billing dates): the new run starts with
    // the window it last read, and keeps the offset.
    engine.config.renewalSpreadMinutes = 60;
    const firstRun = (await handle.describe()).runId;
    await skipTo(boundary(14) + hour + minute);
    await eventually(
      () => cycleOf(id),
      (c) => c === 14,
      30_000,
    );
    expect((await handle.describe()).runId).not.toBe(firstRun);
    expect((await startInput()).renewalSpreadMinutes).toBe(60);
    const year = await paidAfter(id, boundary(14));
    expect(year - offset).toBeGreaterThanOrEqual(0);
    expect(year - offset).toBeLessThan(30_000);
    expect((await engine.charges(id)).filter((c) => c.status === 'succeeded')).toHaveLength(15);

    // The first run's history (with the window changing twice) replays against this code.
    const history = await engine.env.client.workflow.getHandle(id, firstRun).fetchHistory();
    expect(patches(history)).toContain('renewal-spread-live');
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: inject('workflowBundlePath') }, replayName: id },
      history,
    );
  }, 120_000);
});
