import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { endRoundIfQuiet, writeClockMessage } from '../services/test-clocks/registry.ts';
import { testClockWorkflow } from '../workflows/test-clock.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { recordHistory } from './helpers/histories.ts';

/**
 * Issue #29: a test clock's registry lives in PostgreSQL (services/test-clocks/registry.ts), so the clock's own
 * workflow history does not grow with what is on the clock, and the report that ends an instant signals the clock
 * exactly once, however the last reports interleave.
 */
describe('test clock registry in the table', () => {
  let engine: TestEngine;
  let sandbox: Record<string, string>;
  beforeAll(async () => {
    engine = await startTestEngine({ env: { TEST_CLOCK_CUSTOMERS: '20' } });
    sandbox = { ...engine.tenant.headers, 'x-sandbox-mode': 'true' };
  });
  afterAll(() => engine?.close());

  const call = (method: string, url: string, body?: unknown) => engine.call(method, url, body, sandbox);
  async function made(url: string, body: unknown) {
    const response = await call('POST', url, body);
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    return response.body;
  }
  /** The clock's current run as test/histories/<name>.json, for test/replay.test.ts. */
  async function recordClockHistory(clockId: string, name: string): Promise<void> {
    const run = (await engine.env.client.workflow.getHandle(clockId).describe()).runId;
    recordHistory(engine.env.address, clockId, run, name);
  }
  const sql = <T = Record<string, unknown>>(query: string, params: unknown[] = []) =>
    engine.context.orm.em.fork().getConnection().execute<T[]>(query, params);

  async function advance(clockId: string, to: string): Promise<void> {
    const answer = await call('POST', `/v1/test_clocks/${clockId}/advance`, { frozen_time: to });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const started = Date.now();
    for (;;) {
      const clock = (await call('GET', `/v1/test_clocks/${clockId}`)).body;
      if (clock.status === 'ready') return;
      expect(clock.status, JSON.stringify(clock)).toBe('advancing');
      if (Date.now() - started > 60_000) throw new Error(`clock ${clockId} still advancing after 60 s`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** A clock with `n` trials (3 per customer, the sandbox's limit) of a 10-day trial of a monthly plan. */
  async function clockWithTrials(n: number, plan: string): Promise<string> {
    const clock = await made('/v1/test_clocks', { frozen_time: '2031-03-01T00:00:00Z' });
    const subscriptions: Promise<unknown>[] = [];
    for (let i = 0; i < n; i += 3) {
      const customer = await made('/v1/customers', {
        email: `c${i}@registry.example`,
        payment_method: 'pm_card_visa',
        test_clock: clock.id,
      });
      for (let j = i; j < Math.min(n, i + 3); j++)
        subscriptions.push(made('/v1/subscriptions', { customer_id: customer.id, plan }));
    }
    await Promise.all(subscriptions);
    return clock.id;
  }

  /**
   * The clock's history once its workflow task is over: `ready` is written by a local activity of the task whose
   * completion then records that activity's markers, so a history read at `ready` may still lack them.
   */
  async function clockEvents(clockId: string) {
    const { EventType } = temporal.api.enums.v1;
    const open = [EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED];
    let seen = -1;
    for (let i = 0; i < 200; i++) {
      const events = (await engine.env.client.workflow.getHandle(clockId).fetchHistory()).events ?? [];
      if (events.length === seen && !open.includes(events.at(-1)!.eventType!)) return events;
      seen = events.length;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`the history of ${clockId} did not settle`);
  }

  it(
    'keeps the clock history the same size for 5 and for 40 trial ends at one instant',
    { timeout: 150_000 },
    async () => {
      const plan = await made('/v1/plans', {
        name: 'Trial',
        amount: 900,
        currency: 'USD',
        interval: 'month',
        trial_period_days: 10,
      });
      const small = await clockWithTrials(5, plan.id);
      const large = await clockWithTrials(40, plan.id);
      // Both advanced together: 5 and 40 trials end at 03-11, each paid.
      await Promise.all([advance(small, '2031-03-12T00:00:00Z'), advance(large, '2031-03-12T00:00:00Z')]);
      const paid = await sql<{ n: number }>(
        `select count(*)::int as n from invoices i join customers c on c.id = i.customer_id
       where c.test_clock_id = ? and i.status = 'paid'`,
        [large],
      );
      expect(paid[0]!.n).toBe(40);
      const [a, b] = await Promise.all([clockEvents(small), clockEvents(large)]);
      // Before the table every due workflow sent the clock a register or report signal per instant (2+ events per
      // subscription): 40 against 5 made 70+ events more. Now the difference is only how the one "done" signal and the
      // local activities fell into workflow tasks.
      const signals = (events: typeof a) =>
        events
          .filter((e) => e.workflowExecutionSignaledEventAttributes)
          .map((e) => e.workflowExecutionSignaledEventAttributes!.signalName);
      expect(signals(b).filter((s) => s !== 'advanceTestClock' && s !== 'testClockInstantDone')).toEqual([]);
      expect(signals(b).filter((s) => s === 'testClockInstantDone').length).toBeLessThanOrEqual(1);
      // Workflow task events aside (how many tasks the same commands took depends on when the activity's result and
      // the signal arrived), the histories hold the same commands: at most a 30 s wait's timer (started, canceled)
      // more in one of them, when the signal came before the clock began to wait.
      const { EventType } = temporal.api.enums.v1;
      const taskEvents = new Set([
        EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
        EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
        EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
      ]);
      const commands = (events: typeof a) => events.filter((e) => !taskEvents.has(e.eventType!)).length;
      expect(
        Math.abs(commands(b) - commands(a)),
        `${commands(a)} of ${a.length} events for 5, ${commands(b)} of ${b.length} for 40`,
      ).toBeLessThanOrEqual(2);
      expect(b.length, `${a.length} events for 5, ${b.length} for 40`).toBeLessThanOrEqual(40);
      // Every subscription on the large clock has seen the target (the final tick) and waits for its money (03-13).
      const entries = await sql<{ busy: number; stale: number }>(
        `select count(*) filter (where busy_at is not null)::int as busy,
              count(*) filter (where known < '2031-03-12T00:00:00Z')::int as stale
       from test_clock_entries where clock_id = ?`,
        [large],
      );
      expect(entries[0]).toEqual({ busy: 0, stale: 0 });

      if (process.env.RECORD_HISTORIES === '1') {
        // The new path's history for test/replay.test.ts (patch test-clock-registry-in-table).
        await recordClockHistory(small, 'test-clock-registry-in-table');
      }
    },
  );

  it(
    'two last reports at once: exactly one "done" for the round, and the clock is left waiting for nothing',
    { timeout: 60_000 },
    async () => {
      const clock = await made('/v1/test_clocks', { frozen_time: '2031-05-01T00:00:00Z' });
      const at = new Date('2031-05-02T00:00:00Z');
      /** The real client, counting the "done" signals it sends (each still reaches the clock, which ignores a round it never waited for). */
      const sent: number[] = [];
      const client = {
        workflow: {
          getHandle: (id: string) => ({
            signal: async (definition: unknown, arg: { round: number }) => {
              sent.push(arg.round);
              await engine.env.client.workflow.getHandle(id).signal(definition as never, arg as never);
            },
          }),
        },
      } as unknown as Client;
      const report = (workflowId: string) =>
        writeClockMessage(engine.context.orm.em.fork(), client, clock.id, {
          kind: 'report',
          report: { workflowId, wakeAt: '2031-06-01T00:00:00.000Z', known: at.toISOString() },
        });

      for (let round = 1; round <= 12; round++) {
        sent.length = 0;
        // Two entries busy at the instant, the clock waiting for the round (as stepClock leaves it).
        await sql(`delete from test_clock_entries where clock_id = ?`, [clock.id]);
        await sql(
          `insert into test_clock_entries (clock_id, account_id, livemode, workflow_id, wake_at, busy_at, known)
         select ?, account_id, false, w, ?, ?, ? from test_clocks, unnest(array['wf_a', 'wf_b']) as w where id = ?`,
          [clock.id, at, at, new Date('2031-05-01T00:00:00Z'), clock.id],
        );
        await sql(`update test_clock_registries set awaiting_round = ? where clock_id = ?`, [round, clock.id]);
        if (round === 1) {
          // The tightest interleaving: both reports have committed their row, both looked and saw nothing busy, and
          // both wait for the clock's lock to end the round (endRoundIfQuiet, what each report does next).
          await sql(`update test_clock_entries set busy_at = null, wake_at = ? where clock_id = ?`, [at, clock.id]);
          const em = engine.context.orm.em.fork();
          let release!: () => void;
          const held = new Promise<void>((r) => (release = r));
          let locked!: () => void;
          const lockTaken = new Promise<void>((r) => (locked = r));
          const holder = em.transactional(async (tx) => {
            await tx
              .getConnection()
              .execute(
                `select 1 from test_clock_registries where clock_id = ? for update`,
                [clock.id],
                'all',
                tx.getTransactionContext(),
              );
            locked();
            await held;
          });
          await lockTaken;
          const ends = Promise.all([
            endRoundIfQuiet(engine.context.orm.em.fork(), clock.id),
            endRoundIfQuiet(engine.context.orm.em.fork(), clock.id),
          ]);
          try {
            for (let i = 0; ; i++) {
              const waiting = await sql<{ n: number }>(
                `select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like '%awaiting_round from test_clock_registries%'`,
              );
              if (waiting[0]!.n >= 2) break;
              if (i > 400) throw new Error('the two last reports never waited for the lock together');
              await new Promise((r) => setTimeout(r, 10));
            }
          } finally {
            release();
          }
          const [, ended] = await Promise.all([holder, ends]);
          expect(ended.filter((r) => r !== null)).toEqual([round]);
          sent.push(round);
        } else {
          await Promise.all([report('wf_a'), report('wf_b')]);
        }
        expect(sent, `round ${round}`).toEqual([round]);
        const [registry] = await sql<{ awaiting_round: number | null }>(
          `select awaiting_round from test_clock_registries where clock_id = ?`,
          [clock.id],
        );
        expect(registry!.awaiting_round).toBeNull();
        const busy = await sql(`select 1 from test_clock_entries where clock_id = ? and busy_at is not null`, [
          clock.id,
        ]);
        expect(busy).toHaveLength(0);
      }
      // The clock heard 12 rounds it never waited for and ignored them: it still advances.
      await sql(`delete from test_clock_entries where clock_id = ?`, [clock.id]);
      await advance(clock.id, '2031-05-03T00:00:00Z');
    },
  );

  it(
    'a clock run from before the table hands its entries over on continue-as-new, and its workflows keep their wake-ups',
    { timeout: 90_000 },
    async () => {
      const plan = await made('/v1/plans', {
        name: 'Handed over',
        amount: 700,
        currency: 'USD',
        interval: 'month',
        trial_period_days: 5,
      });
      const clockId = await clockWithTrials(1, plan.id);
      const [entry] = await sql<{ workflow_id: string; wake_ms: string; known_ms: string }>(
        `select workflow_id, extract(epoch from wake_at) * 1000 as wake_ms, extract(epoch from known) * 1000 as known_ms
       from test_clock_entries where clock_id = ?`,
        [clockId],
      );
      expect(new Date(Number(entry!.wake_ms)).toISOString()).toBe('2031-03-06T00:00:00.000Z');
      // As if the clock had run before the table: no registry row, its entries in its workflow's state. Its run is
      // replaced by the one a continue-as-new of that run starts: the same input, `entries` carried.
      const { client } = engine.env;
      await client.workflow.getHandle(clockId).terminate('replaced by a run as a continue-as-new of an old one starts');
      await sql(`delete from test_clock_registries where clock_id = ?`, [clockId]);
      const account = (
        await sql<{ account_id: string }>(`select account_id from test_clocks where id = ?`, [clockId])
      )[0]!;
      await client.workflow.start(testClockWorkflow, {
        workflowId: clockId,
        taskQueue: engine.config.clockTaskQueue,
        args: [
          {
            clockId,
            accountId: account.account_id,
            frozenTime: '2031-03-01T00:00:00.000Z',
            entries: [
              [entry!.workflow_id, { wakeAt: Number(entry!.wake_ms), busyAt: null, known: Number(entry!.known_ms) }],
            ],
            target: null,
          },
        ],
      });
      await advance(clockId, '2031-03-07T00:00:00Z');
      // The run moved the entry into the table, and the trial ended on the clock: invoiced and paid.
      const rows = await sql<{ known_ms: string }>(
        `select extract(epoch from known) * 1000 as known_ms from test_clock_entries where clock_id = ?`,
        [clockId],
      );
      expect(rows.map((r) => new Date(Number(r.known_ms)).toISOString())).toEqual(['2031-03-07T00:00:00.000Z']);
      const paid = await sql<{ n: number }>(
        `select count(*)::int as n from invoices i join customers c on c.id = i.customer_id
       where c.test_clock_id = ? and i.status = 'paid'`,
        [clockId],
      );
      expect(paid[0]!.n).toBe(1);
    },
  );
  it(
    'a busy workflow whose task waits in Temporal is not stuck: the quiet timeout waits for it; one with nothing pending fails the advance',
    { timeout: 90_000 },
    async () => {
      /** A clock of its own whose next advance fails after 2 s without a report (the stall helper), its stand-in removed. */
      async function quietClock(frozen: string): Promise<string> {
        const clock = await made('/v1/test_clocks', { frozen_time: frozen });
        const stalled = await call('POST', `/v1/test_helpers/test_clocks/${clock.id}/stall`, { quiet_timeout: 2 });
        expect(stalled.status, JSON.stringify(stalled.body)).toBe(200);
        for (let i = 0; ; i++) {
          const [row] = await sql(`delete from test_clock_entries where clock_id = ? and workflow_id = ? returning 1`, [
            clock.id,
            'stalled_by_test_helper',
          ]);
          if (row) return clock.id;
          if (i > 200) throw new Error("the stall helper's stand-in never reached the table");
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      /** A workflow whose first workflow task waits: nothing polls its queue. Busy on the clock from `known`. */
      async function queuedOn(clockId: string, known: string): Promise<string> {
        const workflowId = `queued-${clockId}`;
        await engine.env.client.workflow.start('waitsForAWorker', {
          workflowId,
          taskQueue: `nobody-polls-${clockId}`,
          args: [],
        });
        await writeClockMessage(engine.context.orm.em.fork(), engine.env.client, clockId, {
          kind: 'register',
          workflowId,
          known,
        });
        return workflowId;
      }
      const status = async (clockId: string) => (await call('GET', `/v1/test_clocks/${clockId}`)).body;

      const clockId = await quietClock('2031-07-01T00:00:00Z');
      const workflowId = await queuedOn(clockId, '2031-07-01T00:00:00.000Z');
      const answer = await call('POST', `/v1/test_clocks/${clockId}/advance`, { frozen_time: '2031-07-02T00:00:00Z' });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      // Five quiet timeouts and more: the workflow's task is still waiting, so the clock waits with it.
      await new Promise((r) => setTimeout(r, 11_000));
      expect(await status(clockId)).toMatchObject({ status: 'advancing' });
      // Its turn comes: it reports, and the advance completes.
      await writeClockMessage(engine.context.orm.em.fork(), engine.env.client, clockId, {
        kind: 'report',
        report: { workflowId, wakeAt: null, known: '2031-07-01T00:00:00.000Z' },
      });
      const deadline = Date.now() + 30_000;
      while ((await status(clockId)).status === 'advancing' && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      expect(await status(clockId)).toMatchObject({ status: 'ready', frozen_time: '2031-07-02T00:00:00.000Z' });
      if (process.env.RECORD_HISTORIES === '1') {
        // The quiet timeout's checks with patch test-clock-queued-not-stuck, for test/replay.test.ts.
        await recordClockHistory(clockId, 'test-clock-queued-not-stuck');
      }

      // The same with a workflow that has nothing pending (terminated, as a stuck one would be idle): 2 s, then
      // internal_failure naming it.
      const stuckClock = await quietClock('2031-08-01T00:00:00Z');
      const stuck = await queuedOn(stuckClock, '2031-08-01T00:00:00.000Z');
      await engine.env.client.workflow.getHandle(stuck).terminate('stands for a workflow that never reports');
      const advanced = await call('POST', `/v1/test_clocks/${stuckClock}/advance`, {
        frozen_time: '2031-08-02T00:00:00Z',
      });
      expect(advanced.status, JSON.stringify(advanced.body)).toBe(200);
      const failBy = Date.now() + 30_000;
      while ((await status(stuckClock)).status === 'advancing' && Date.now() < failBy)
        await new Promise((r) => setTimeout(r, 100));
      const failed = await status(stuckClock);
      expect(failed.status).toBe('internal_failure');
      expect(JSON.stringify(failed)).toContain(stuck);
    },
  );
});
