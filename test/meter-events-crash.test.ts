/**
 * The API process SIGKILLed in the middle of a batch of meter events (issue #28): once right after the
 * batch's statement committed (stored, never answered: test/fixtures/usage-api.ts), once from outside
 * while batches are in flight. The client sends each whole batch again to a fresh process: every event
 * is counted exactly once.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

describe('an API process killed in the middle of a batch of meter events', () => {
  let engine: TestEngine;
  let customer: string;
  let meter: string;
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
    customer = (await engine.call('POST', '/v1/customers', { email: 'crash-usage@example.com' })).body.id;
    meter = (
      await engine.call('POST', '/v1/meters', { display_name: 'Calls', event_name: 'crash_calls', aggregation: 'sum' })
    ).body.id;
  });
  afterAll(() => engine?.close());

  async function startApi(crash: boolean) {
    const child = spawn(process.execPath, ['test/fixtures/usage-api.ts'], {
      env: { ...process.env, DATABASE_URL: engine.db.url, CRASH_AFTER_INGEST: crash ? '1' : '' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    const exited = once(child, 'exit');
    const port = await eventually(
      async () => /listening (\d+)/.exec(output)?.[1],
      (p) => p !== undefined,
      30_000,
    );
    const send = async (events: unknown[]) => {
      const response = await fetch(`http://127.0.0.1:${port}/v1/meter_events/batch`, {
        method: 'POST',
        headers: { ...engine.tenant.headers, 'content-type': 'application/json' },
        body: JSON.stringify({ events }),
      });
      return {
        status: response.status,
        body: (await response.json()) as { accepted: number; duplicates: number; refused: number },
      };
    };
    return { send, exited, output: () => output, kill: () => child.kill('SIGKILL'), stop: () => child.kill('SIGTERM') };
  }

  const batch = (name: string, size: number) =>
    Array.from({ length: size }, (_, i) => ({
      event_name: 'crash_calls',
      customer,
      identifier: `${name}-${i}`,
      payload: { value: 1 },
    }));
  const total = async () => {
    const now = Math.floor(Date.now() / 1000);
    const answer = await engine.call(
      'GET',
      `/v1/meters/${meter}/event_summaries?customer=${customer}&start_time=${now - 3600}&end_time=${now + 600}`,
    );
    return answer.body.data[0] as { aggregated_value: string; events: number };
  };

  it('counts each event once when the whole batch is sent again to a fresh process', { timeout: 120_000 }, async () => {
    // 1. Committed, then killed before answering.
    const doomed = await startApi(true);
    const a = batch('a', 1000);
    await expect(doomed.send(a)).rejects.toThrow();
    const [, signal] = await doomed.exited;
    expect(signal).toBe('SIGKILL');
    expect(doomed.output()).toContain('ingested 1000; crashing');
    expect(await total()).toMatchObject({ events: 1000 });

    // 2. Killed from outside with batches in flight: some committed, some not, none answered.
    const victim = await startApi(false);
    const inFlight = ['b', 'c', 'd', 'e'].map((name) => batch(name, 1000));
    const sends = inFlight.map((events) => victim.send(events).catch(() => null));
    await new Promise((resolve) => setTimeout(resolve, 150));
    victim.kill();
    await victim.exited;
    const answered = await Promise.all(sends);
    const before = (await total()).events;
    expect(before).toBeGreaterThanOrEqual(1000);
    expect(before).toBeLessThanOrEqual(5000);

    // 3. The client retries every batch it had no answer for, whole, against a fresh process.
    const fresh = await startApi(false);
    try {
      const retried = await fresh.send(a);
      expect(retried.status).toBe(200);
      expect(retried.body).toMatchObject({ accepted: 0, duplicates: 1000, refused: 0 });
      let accepted = 0;
      for (const [i, events] of inFlight.entries()) {
        const again = await fresh.send(events);
        expect(again.status).toBe(200);
        expect(again.body.accepted + again.body.duplicates).toBe(1000);
        accepted += again.body.accepted;
        // A batch answered before the kill is all duplicates now.
        if (answered[i]?.status === 200) expect(again.body.duplicates).toBe(1000);
      }
      expect(before - 1000 + accepted).toBe(4000);
      expect(await total()).toEqual(expect.objectContaining({ aggregated_value: '5000', events: 5000 }));
    } finally {
      fresh.stop();
    }
  });
});
