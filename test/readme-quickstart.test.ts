/**
 * README.md's quick start ("Try it with curl") as a reader runs it: its shell block, taken from the
 * README as written, run by bash with curl and jq against a started engine (the real app over real
 * HTTP, its worker, PostgreSQL and Temporal's test server), with only the address changed. The README
 * cannot drift from the API: a renamed field or route fails here. The block's `npm run temporal`
 * line (the Temporal CLI against a dev server) is replaced by the same question asked of the test
 * server: the subscription's workflow runs.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { RunningApi } from '../api/server.ts';
import { servePublicApi } from './helpers/browser.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';

const run = promisify(execFile);

/** The first ```sh block after "Try it with curl" in README.md. */
function quickStartBlock(readme: string): string {
  const from = readme.indexOf('Try it with curl');
  expect(from, 'README.md has its "Try it with curl" quick start').toBeGreaterThan(0);
  const start = readme.indexOf('```sh\n', from) + '```sh\n'.length;
  return readme.slice(start, readme.indexOf('\n```', start));
}

describe("README.md's quick start", () => {
  let engine: TestEngine;
  let api: RunningApi;
  let baseUrl: string;

  beforeAll(async () => {
    engine = await startTestEngine();
    ({ api, baseUrl } = await servePublicApi(engine));
  });
  afterAll(async () => {
    await api?.close();
    await engine?.close();
  });

  it('runs as written: sign-up, log in, a customer, a plan, a trialing subscription; live mode on the sandbox processor', async () => {
    const block = quickStartBlock(fs.readFileSync(path.resolve('README.md'), 'utf8'));
    expect(block).toContain('localhost:3000');
    const lines = block.split('\n');
    const temporalLine = lines.findIndex((line) => line.startsWith('npm run temporal'));
    expect(temporalLine, 'the block lists the workflow with the Temporal CLI').toBeGreaterThan(0);
    // Each command's output on its own line, so the test can read them apart.
    const script = lines
      .map((line, i) => (i === temporalLine ? 'echo' : line.replace(/\s+# .*$/, '')))
      .map((line) => (line.endsWith('\\') || line.startsWith('#') || line === '' ? line : `${line}; echo`))
      .join('\n')
      .replaceAll('localhost:3000', baseUrl.replace('http://', ''));
    const { stdout } = await run('bash', ['-euo', 'pipefail', '-c', script], { timeout: 60_000 });
    const outputs = stdout
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean);
    const account = JSON.parse(outputs[0]!);
    expect(account).toMatchObject({ object: 'account', email: 'owner@acme.example', name: 'Acme' });
    const subscription = JSON.parse(outputs.find((line) => line.includes('"object":"subscription"'))!);
    // The comment in the README says what the call answers.
    expect(block).toContain('"status":"trialing"');
    expect(subscription).toMatchObject({ status: 'trialing', livemode: false });
    // What the Temporal CLI line shows: the subscription's workflow, running.
    const described = await engine.env.client.workflow.getHandle(subscription.id).describe();
    expect(described.status.name).toBe('RUNNING');
    // The last line: the live-mode customer (no x-sandbox-mode) made with a test card.
    expect(block).toMatch(/jq \.livemode\s+# true/);
    expect(outputs.at(-1)).toBe('true');
    // "sign in ... it opens in test mode, where Ada, Pro and the subscription are": the sandbox holds them.
    const owner = (await engine.login('owner@acme.example', 'Acme!2345')).headers;
    const sandboxSubs = await engine.call('GET', '/v1/subscriptions', undefined, {
      ...owner,
      'x-sandbox-mode': 'true',
    });
    expect(sandboxSubs.body.data.map((s: { id: string }) => s.id)).toEqual([subscription.id]);
    const live = await engine.call('GET', '/v1/customers', undefined, owner);
    expect(live.body.data).toHaveLength(1);
    expect(live.body.data[0]).toMatchObject({ livemode: true, email: 'ada@example.com' });
  });
});
