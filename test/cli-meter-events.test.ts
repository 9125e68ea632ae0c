/**
 * `billing meter-events send` (cli/meter-events-send.ts) against the real engine: one event from
 * options, then a file of JSON lines sent in batches, sent twice (counted once: identifiers derived
 * from the file for stamped lines; lines without a timestamp count at each run), with a refused line reported and the exit code saying so.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { serve, type ServerType } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startTestEngine, type TestEngine } from './helpers/engine.ts';

describe('billing meter-events send', () => {
  let engine: TestEngine;
  let server: ServerType;
  let base: string;
  let home: string;
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
    await new Promise<void>((resolve) => {
      server = serve({ fetch: engine.app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
        base = `http://127.0.0.1:${info.port}`;
        resolve();
      });
    });
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-cli-usage-'));
  });
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    await engine?.close();
    fs.rmSync(home, { recursive: true, force: true });
  });

  const run = (args: string[]) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [path.resolve('cli/index.ts'), ...args], {
        env: {
          PATH: process.env.PATH ?? '',
          HOME: home,
          XDG_CONFIG_HOME: path.join(home, 'config'),
          BILLING_API_BASE: base,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });

  const totals = (stdout: string) => JSON.parse(stdout.slice(0, stdout.indexOf('\n}\n') + 2));

  it(
    'sends one event, then a file in batches; the same file again counts nothing twice',
    { timeout: 90_000 },
    async () => {
      // Log in with the device flow, approved by the owner in the sandbox.
      const login = spawn(process.execPath, [path.resolve('cli/index.ts'), 'login', '--name', 'usage'], {
        env: {
          PATH: process.env.PATH ?? '',
          HOME: home,
          XDG_CONFIG_HOME: path.join(home, 'config'),
          BILLING_API_BASE: base,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let loginErr = '';
      login.stderr.on('data', (d) => (loginErr += d));
      const loggedIn = new Promise((resolve) => login.on('close', resolve));
      const deadline = Date.now() + 20_000;
      let code: string | undefined;
      while (!(code = /login code is ([A-Z]{4}-[A-Z]{4})/.exec(loginErr)?.[1]) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      expect((await engine.call('POST', '/v1/cli/device/approve', { user_code: code, livemode: false })).status).toBe(
        200,
      );
      expect(await loggedIn).toBe(0);

      const sandbox = { ...engine.tenant.headers, 'x-sandbox-mode': 'true' };
      const customer = (await engine.call('POST', '/v1/customers', { email: 'cli-usage@example.com' }, sandbox)).body
        .id;
      const meter = (
        await engine.call(
          'POST',
          '/v1/meters',
          { display_name: 'Calls', event_name: 'cli_calls', aggregation: 'sum' },
          sandbox,
        )
      ).body.id;

      const one = await run([
        'meter-events',
        'send',
        '--event-name',
        'cli_calls',
        '--customer',
        customer,
        '--value',
        '2.5',
        '--identifier',
        'cli-one',
        '--json',
      ]);
      expect(one.code, one.stderr).toBe(0);
      expect(JSON.parse(one.stdout)).toMatchObject({
        object: 'billing.meter_event',
        identifier: 'cli-one',
        payload: { value: '2.5' },
      });

      const file = path.join(home, 'usage.jsonl');
      const stampedAt = Math.floor(Date.now() / 1000) - 60;
      const lines = Array.from({ length: 25 }, (_, i) =>
        JSON.stringify({ event_name: 'cli_calls', customer, timestamp: stampedAt, payload: { value: i + 1 } }),
      );
      fs.writeFileSync(
        file,
        `${lines.join('\n')}\n\n${JSON.stringify({ event_name: 'nope', customer, payload: { value: 1 } })}\n`,
      );
      const first = await run(['meter-events', 'send', '--file', file, '--batch-size', '10', '--json']);
      expect(first.code).not.toBe(0);
      expect(totals(first.stdout)).toEqual({ sent: 26, accepted: 25, duplicates: 0, refused: 1 });
      expect(first.stderr).toContain('line 27: refused unknown_meter');
      // With --json the refusal follows as its own JSON error object.
      expect(first.stdout).toContain('{"error":"refused","message":"1 of 26 events refused (see above)."}');
      const again = await run(['meter-events', 'send', '--file', file, '--json']);
      expect(totals(again.stdout)).toEqual({ sent: 26, accepted: 0, duplicates: 25, refused: 1 });

      // Lines without a timestamp are usage at the time of each run: the same file sent again counts again.
      const hourly = path.join(home, 'hourly.jsonl');
      fs.writeFileSync(
        hourly,
        `${JSON.stringify({ event_name: 'cli_calls', customer, payload: { value: 1 } })}\n`.repeat(2),
      );
      for (let i = 0; i < 2; i++)
        expect(totals((await run(['meter-events', 'send', '--file', hourly, '--json'])).stdout)).toEqual({
          sent: 2,
          accepted: 2,
          duplicates: 0,
          refused: 0,
        });

      const now = Math.floor(Date.now() / 1000);
      const summary = await engine.call(
        'GET',
        `/v1/meters/${meter}/event_summaries?customer=${customer}&start_time=${now - 3600}&end_time=${now + 600}`,
        undefined,
        sandbox,
      );
      expect(summary.body.data[0]).toMatchObject({ aggregated_value: String(2.5 + (25 * 26) / 2 + 4), events: 30 });
    },
  );
});
