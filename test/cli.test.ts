import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { serve, type ServerType } from '@hono/node-server';
import { Webhook } from 'standardwebhooks';
import { ulid } from 'ulidx';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createApp } from '../api/app.ts';
import { deriveOperations } from '../cli/operations.ts';
import { createLogger } from '../logger.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';

const cliEntry = path.resolve('cli/index.ts');
const sandbox = { 'x-sandbox-mode': 'true' };

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('the billing CLI against the real engine', () => {
  let engine: TestEngine;
  let server: ServerType;
  let base: string;
  const homes: string[] = [];

  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
    await new Promise<void>((resolve) => {
      server = serve({ fetch: engine.app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
        base = `http://127.0.0.1:${info.port}`;
        resolve();
      });
    });
  });
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    await engine?.close();
    for (const home of homes) fs.rmSync(home, { recursive: true, force: true });
  });

  function newHome(): string {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-cli-'));
    homes.push(home);
    return home;
  }

  const childEnv = (home: string, extra: Record<string, string> = {}) => {
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      HOME: home,
      XDG_CONFIG_HOME: path.join(home, 'config'),
      BILLING_API_BASE: base,
      ...extra,
    };
    return env;
  };

  function start(
    home: string,
    args: string[],
    extra: Record<string, string> = {},
  ): ChildProcess & { out: () => string; err: () => string; done: Promise<Run> } {
    const child = spawn(process.execPath, [cliEntry, ...args], {
      env: childEnv(home, extra),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    const done = new Promise<Run>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
    return Object.assign(child, { out: () => stdout, err: () => stderr, done });
  }

  const run = (home: string, args: string[], extra: Record<string, string> = {}) => start(home, args, extra).done;

  async function until<T>(
    what: string,
    probe: () => T | undefined | Promise<T | undefined>,
    timeoutMs = 15_000,
  ): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await probe();
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  const configOf = (home: string) =>
    JSON.parse(fs.readFileSync(path.join(home, 'config', 'billing', 'config.json'), 'utf8'));

  /** A home logged in with the device flow, approved through the API by the owner (test mode). */
  async function deviceLogin(home: string): Promise<Run> {
    const login = start(home, ['login', '--name', 'ci-laptop']);
    const code = await until(
      'the login code and link',
      () => /login code is ([A-Z]{4}-[A-Z]{4})\nOpen \S+\/cli\/approve\?code=\1 /.exec(login.err())?.[1],
    );
    const approved = await engine.call('POST', '/v1/cli/device/approve', { user_code: code, livemode: false });
    expect(approved.status).toBe(200);
    return login.done;
  }

  let home: string;

  it('cli/operations.json is what the live OpenAPI document gives (npm run cli:generate)', async () => {
    const doc = (await (await fetch(`${base}/openapi.json`)).json()) as Record<string, unknown>;
    const snapshot = JSON.parse(fs.readFileSync('cli/operations.json', 'utf8'));
    expect(snapshot).toEqual(deriveOperations(doc));
    expect(snapshot.map((op: { resource: string; action: string }) => `${op.resource} ${op.action}`)).toEqual(
      expect.arrayContaining([
        'customers list',
        'customers get',
        'customers create',
        'subscriptions cancel',
        'invoices void',
        'transactions delete',
        'events list',
      ]),
    );
  });

  it('device login: pending until the owner approves, then one CLI key stored with mode 0600', async () => {
    const sql = engine.db.orm.em.getConnection();
    await sql.execute(
      `insert into cli_device_codes (id, device_code_hash, user_code, device_name, created_at, expires_at) values ('dev_stale', 'stale', 'BBBB-BBBB', 'old', now() - interval '3 days', now() - interval '2 days')`,
    );
    const pending = await engine.call('POST', '/v1/cli/device', { name: 'probe' }, { authorization: '' });
    expect(pending.status).toBe(201);
    expect(await sql.execute(`select id from cli_device_codes where id = 'dev_stale'`)).toEqual([]);
    expect(pending.body).toMatchObject({
      user_code: expect.stringMatching(/^[A-Z]{4}-[A-Z]{4}$/),
      expires_in: 600,
      interval: 2,
    });
    const poll = await engine.call(
      'POST',
      '/v1/cli/token',
      { device_code: pending.body.device_code },
      { authorization: '' },
    );
    expect(poll).toMatchObject({ status: 400, body: { error: 'authorization_pending' } });

    home = newHome();
    const result = await deviceLogin(home);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`Logged in as ${engine.tenant.email}`);
    const file = path.join(home, 'config', 'billing', 'config.json');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const config = configOf(home);
    expect(config.key.secret).toMatch(/^ck_test_/);
    expect(config.key.name).toBe(`${engine.tenant.email} on ci-laptop`);
    expect(config.env).toBe('test');

    const who = await run(home, ['whoami', '--json']);
    expect(who.code).toBe(0);
    expect(JSON.parse(who.stdout)).toMatchObject({
      account: { id: engine.tenant.accountId },
      livemode: false,
      kind: 'cli_key',
      user: { email: engine.tenant.email },
    });
  });

  it('a device code gives its key once', async () => {
    const pending = await engine.call('POST', '/v1/cli/device', {}, { authorization: '' });
    await engine.call('POST', '/v1/cli/device/approve', {
      user_code: pending.body.user_code.toLowerCase(),
      livemode: false,
    });
    const first = await engine.call(
      'POST',
      '/v1/cli/token',
      { device_code: pending.body.device_code },
      { authorization: '' },
    );
    expect(first.status).toBe(200);
    expect(first.body.secret).toMatch(/^ck_test_/);
    const again = await engine.call(
      'POST',
      '/v1/cli/token',
      { device_code: pending.body.device_code },
      { authorization: '' },
    );
    expect(again).toMatchObject({ status: 400, body: { error: 'expired_token' } });
  });

  it('resource commands: create, get and list with --json, body fields as --field and -d key=value', async () => {
    const created = await run(home, [
      'customers',
      'create',
      '--email',
      'cli@example.com',
      '-d',
      'name=From the CLI',
      '--json',
    ]);
    expect(created.code).toBe(0);
    const customer = JSON.parse(created.stdout);
    expect(customer).toMatchObject({
      id: expect.stringMatching(/^cus_/),
      email: 'cli@example.com',
      name: 'From the CLI',
      livemode: false,
    });
    const got = await run(home, ['customers', 'get', customer.id, '--json']);
    expect(got.code).toBe(0);
    expect(JSON.parse(got.stdout)).toEqual(customer);
    const listed = await run(home, ['customers', 'list', '--json']);
    expect(JSON.parse(listed.stdout).data.map((c: { id: string }) => c.id)).toContain(customer.id);
    // In test mode only: the live side of the account does not see it.
    const live = await engine.call('GET', `/v1/customers/${customer.id}`);
    expect(live.status).toBe(404);
    const human = await run(home, ['customers', 'list']);
    expect(human.stdout).toContain(`${customer.id}  From the CLI  cli@example.com  ${customer.created_at}`);
  });

  it('exit codes: not found 4, usage 2, auth 3, help 0', async () => {
    const missing = await run(home, ['customers', 'get', 'cus_00000000000000000000000000', '--json']);
    expect(missing.code).toBe(4);
    expect(JSON.parse(missing.stdout)).toMatchObject({ error: 'not_found' });
    expect((await run(home, ['customers', 'create', '--name', 'no email'])).code).toBe(2);
    expect((await run(home, ['customers', 'list', '--bogus'])).code).toBe(2);
    expect((await run(home, ['nope'])).code).toBe(2);
    expect((await run(home, ['customers', 'create', '--email', 'x@example.com', '-d', 'oops'])).code).toBe(2);
    expect((await run(newHome(), ['customers', 'list'])).code).toBe(3);
    const help = await run(home, ['customers', 'create', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--email <value>');
  });

  it('open launches the browser ($BROWSER, else xdg-open) with the link, and prints the link when there is none', async () => {
    const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-cli-bin-'));
    homes.push(bin);
    const opened = path.join(bin, 'opened.txt');
    // A stand-in browser: records what it was asked to open.
    const fake = path.join(bin, 'fake-browser');
    fs.writeFileSync(fake, `#!/bin/sh\nprintf '%s\\n' "$@" >> '${opened}'\n`, { mode: 0o755 });
    const viaBrowser = await run(home, ['open', 'docs'], { BROWSER: fake });
    expect(viaBrowser.code).toBe(0);
    expect(viaBrowser.stdout.trim()).toBe(`${base}/docs`);
    expect(viaBrowser.stderr).toContain('Opened');
    await until(
      'the browser to be launched',
      () => fs.existsSync(opened) && fs.readFileSync(opened, 'utf8').includes(`${base}/docs`),
    );

    // No $BROWSER: xdg-open found on PATH.
    const xdg = path.join(bin, 'xdg-open');
    fs.copyFileSync(fake, xdg);
    fs.chmodSync(xdg, 0o755);
    const viaXdg = await run(home, ['open', 'openapi', '--json'], { PATH: `${bin}:${path.dirname(process.execPath)}` });
    expect(viaXdg.code).toBe(0);
    expect(JSON.parse(viaXdg.stdout)).toEqual({ url: `${base}/openapi.json`, opened: true });
    await until('xdg-open to be launched', () => fs.readFileSync(opened, 'utf8').includes(`${base}/openapi.json`));

    // Neither: the link is printed, with a hint, and it is no error.
    const none = await run(home, ['open', 'temporal'], {
      PATH: path.dirname(process.execPath),
      TEMPORAL_UI_URL: 'http://127.0.0.1:8233',
    });
    expect(none.code).toBe(0);
    expect(none.stdout.trim()).toBe('http://127.0.0.1:8233');
    expect(none.stderr).toContain('No browser to open');
    // --print never launches anything.
    const lines = fs.readFileSync(opened, 'utf8');
    expect((await run(home, ['open', 'docs', '--print'], { BROWSER: fake })).stdout.trim()).toBe(`${base}/docs`);
    await new Promise((r) => setTimeout(r, 300));
    expect(fs.readFileSync(opened, 'utf8')).toBe(lines);
    expect((await run(home, ['open', 'nowhere'])).code).toBe(2);
  });

  it('invoices pdf downloads the PDF to a file (its number by default, -o elsewhere, - to stdout)', async () => {
    const id = `inv_${ulid().toLowerCase()}`;
    const at = new Date(Date.UTC(2026, 10, 2));
    await engine.db.orm.em.getConnection().execute(
      `insert into invoices (id, number, billing_key, subscription_id, customer_id, customer_email, customer_name, status, currency, subtotal, total, amount_due, amount_paid, attempt_count, lines, period_start, period_end, account_id, livemode, created_at, amount_refunded)
       values (?, 'CLI-0001', ?, 'sub_cli', 'cus_cli', 'cli@example.com', 'Cli Buyer', 'open', 'USD', 4200, 4200, 4200, 0, 0, ?, ?, ?, ?, false, ?, 0)`,
      [
        id,
        `cli-${id}`,
        JSON.stringify([
          {
            description: 'CLI plan',
            quantity: 1,
            amount: 4200,
            period_start: at.toISOString(),
            period_end: at.toISOString(),
          },
        ]),
        at,
        at,
        engine.tenant.accountId,
        at,
      ],
    );
    const folder = newHome();
    const saved = await new Promise<Run>((resolve) => {
      const child = spawn(process.execPath, [cliEntry, 'invoices', 'pdf', id], {
        cwd: folder,
        env: childEnv(home),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    expect(saved.code, saved.stderr).toBe(0);
    const file = path.join(folder, 'CLI-0001.pdf');
    expect(saved.stdout).toContain(`Saved ${file}`);
    const bytes = fs.readFileSync(file);
    expect(bytes.subarray(0, 5).toString()).toBe('%PDF-');
    const chosen = path.join(folder, 'chosen.pdf');
    const explicit = await run(home, ['invoices', 'pdf', id, '-o', chosen, '--json']);
    expect(explicit.code).toBe(0);
    expect(JSON.parse(explicit.stdout)).toMatchObject({
      file: chosen,
      content_type: 'application/pdf',
      bytes: fs.statSync(chosen).size,
    });
    // (Not execFileSync: it would block this process, which serves the API.)
    const piped = await run(home, ['invoices', 'pdf', id, '-o', '-']);
    expect(piped.code).toBe(0);
    expect(piped.stdout.startsWith('%PDF-')).toBe(true);
    // Another account's (or no) invoice: not found, exit 4, no file.
    const missing = await run(home, [
      'invoices',
      'pdf',
      'inv_00000000000000000000000000',
      '-o',
      path.join(folder, 'missing.pdf'),
    ]);
    expect(missing.code).toBe(4);
    expect(fs.existsSync(path.join(folder, 'missing.pdf'))).toBe(false);
  });

  it('a stored key of the other mode is refused before any request is sent', async () => {
    // The API base is a closed port: had the CLI sent a request it would exit with the network code (8).
    const closed = `http://127.0.0.1:9`;
    const refused = await run(home, ['customers', 'list', '--api-base', closed], { FINTECH_ENV: 'live' });
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('[LIVE]');
    expect(refused.stderr).toContain('test-mode key but the mode is live');
    // The flag beats the environment.
    expect(
      (await run(home, ['customers', 'list', '--env', 'live', '--api-base', closed], { FINTECH_ENV: 'test' })).code,
    ).toBe(3);
    expect(
      (await run(home, ['customers', 'list', '--env', 'test', '--api-base', closed], { FINTECH_ENV: 'live' })).code,
    ).toBe(8);
    expect((await run(home, ['customers', 'list'], { FINTECH_ENV: 'staging' })).code).toBe(2);
  });

  it('live mode: login with email and password, [LIVE] on stderr, destructive commands need --confirm <id>', async () => {
    const liveHome = newHome();
    const login = await run(liveHome, [
      'login',
      '--email',
      engine.tenant.email,
      '--password',
      engine.tenant.password,
      '--name',
      'ci-live',
      '--env',
      'live',
    ]);
    expect(login.code).toBe(0);
    expect(configOf(liveHome).key.secret).toMatch(/^ck_live_/);
    const id = 'sub_00000000000000000000000000';
    const unconfirmed = await run(liveHome, ['subscriptions', 'cancel', id]);
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.stderr).toContain('[LIVE]');
    expect(unconfirmed.stderr).toContain(`--confirm ${id}`);
    expect((await run(liveHome, ['subscriptions', 'cancel', id, '--confirm', 'sub_other'])).code).toBe(2);
    // Confirmed: the request is sent (and the subscription does not exist).
    expect((await run(liveHome, ['subscriptions', 'cancel', id, '--confirm', id])).code).toBe(4);
    // Test mode needs no confirmation.
    expect((await run(home, ['subscriptions', 'cancel', id])).code).toBe(4);
    // A CLI key may not touch live payouts, users or API keys.
    const secret = configOf(liveHome).key.secret;
    const asCli = { authorization: '', 'x-cli-key': secret };
    expect((await engine.call('GET', '/v1/payouts', undefined, asCli)).status).toBe(403);
    expect((await engine.call('GET', '/v1/users', undefined, asCli)).status).toBe(403);
    expect((await engine.call('POST', '/v1/api_keys', {}, asCli)).status).toBe(403);
    expect((await engine.call('POST', '/v1/cli_keys', { name: 'x' }, asCli)).status).toBe(403);
    expect((await engine.call('GET', '/v1/customers', undefined, asCli)).status).toBe(200);
    expect(
      (
        await engine.call('GET', '/v1/payouts', undefined, {
          authorization: '',
          'x-cli-key': configOf(home).key.secret,
        })
      ).status,
    ).toBe(200);
  });

  it('listen forwards each event of the account and mode, signed with the stable local secret, within a second', async () => {
    const received: { at: number; body: string; headers: IncomingHttpHeaders }[] = [];
    const receiver: Server = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        received.push({ at: Date.now(), body, headers: req.headers });
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
    const listen = start(home, ['listen', '--forward-to', url, '--events', 'customer.*']);
    try {
      await until('listen to be ready', () => listen.err().includes('^C to quit'));
      const secret = configOf(home).webhook_secret as string;
      expect(secret).toMatch(/^whsec_/);
      expect(listen.err()).toContain(secret);
      // Noise: the live side of the account, another account, and a type not asked for.
      await engine.call('POST', '/v1/customers', { email: 'live@example.com' });
      const other = await engine.signUp();
      await engine.call('POST', '/v1/customers', { email: 'other@example.com' }, { ...other.headers, ...sandbox });
      await engine.call(
        'POST',
        '/v1/plans',
        { name: 'Noise', amount: 100, currency: 'USD', interval: 'month' },
        sandbox,
      );
      const t0 = Date.now();
      const created = await engine.call('POST', '/v1/customers', { email: 'listened@example.com' }, sandbox);
      expect(created.status).toBe(201);
      const delivery = await until('the forwarded event', () => received[0], 5000);
      expect(delivery.at - t0).toBeLessThan(1000);
      const event = new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>) as {
        type: string;
        data: { object: { id: string } };
      };
      expect(event.type).toBe('customer.created');
      expect(event.data.object.id).toBe(created.body.id);
      await until('the forward line', () => listen.out().includes('[200]'));
      expect(listen.out()).toContain(`customer.created`);
      await new Promise((r) => setTimeout(r, 500));
      expect(received).toHaveLength(1);
    } finally {
      listen.kill('SIGINT');
      await listen.done;
      receiver.close();
    }
    // The secret is stable across runs.
    const before = configOf(home).webhook_secret;
    const again = start(home, ['listen', '--forward-to', url]);
    await until('listen to be ready again', () => again.err().includes('^C to quit'));
    again.kill('SIGINT');
    await again.done;
    expect(configOf(home).webhook_secret).toBe(before);
  });

  /** Whether the sandbox has an event of `type` recorded at or after `since`. */
  async function recordedSince(type: string, since: number): Promise<boolean> {
    const events = await engine.call('GET', `/v1/events?type=${type}&limit=20`, undefined, sandbox);
    return events.body.data.some((e: { created_at: string }) => Date.parse(e.created_at) >= since);
  }

  /** A page's form posted as `billing trigger` posts it (a browser's form, no key). */
  const postForm = async (pagePath: string, form: Record<string, string>) =>
    (await fetch(new URL(pagePath, base), { method: 'POST', body: new URLSearchParams(form) })).status;

  /** A recipe's calls as another account's user (its access token, in the sandbox) or with no credential. */
  const callAs = (accessToken: string | null) => async (method: string, apiPath: string, body?: unknown) => {
    const answer = await engine.call(
      method,
      apiPath,
      body,
      accessToken === null ? { authorization: '' } : { authorization: `Bearer ${accessToken}`, ...sandbox },
    );
    if (answer.status >= 300) throw new Error(`${method} ${apiPath}: ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer.body;
  };

  /** A recipe's API calls as `billing trigger` sends them: with a test CLI key, so its scope applies. */
  async function cliKeyCall() {
    const { CliError, exitCodeForStatus } = await import('../cli/exit-codes.ts');
    const key = (await engine.call('POST', '/v1/cli_keys', { name: 'triggers', mode: 'test' })).body.secret as string;
    return async (method: string, apiPath: string, body?: unknown) => {
      const answer = await engine.call(method, apiPath, body, { authorization: '', 'x-cli-key': key });
      if (answer.status >= 300)
        throw new CliError(
          exitCodeForStatus(answer.status),
          answer.body.error,
          `${method} ${apiPath}: ${answer.body.message}`,
          answer.body,
        );
      return answer.body;
    };
  }

  it('trigger: every event type of the catalog has a recipe, documented', async () => {
    const { triggerableEvents, notTriggered } = await import('../cli/triggers.ts');
    const { eventTypes } = await import('../domain/events.ts');
    const docs = fs.readFileSync(path.join(import.meta.dirname, '..', 'docs', 'cli.md'), 'utf8');
    const recipeTable = docs.slice(docs.indexOf('## `trigger`'), docs.indexOf('## `logs tail`'));
    const uncovered = eventTypes.filter((type) => !triggerableEvents.includes(type));
    // Faults through the sandbox test helpers, account events in a throwaway account: no exception is left.
    expect(uncovered, 'a new event type needs a recipe in cli/triggers.ts').toEqual([]);
    expect(notTriggered).toEqual({});
    expect(eventTypes).toEqual(expect.arrayContaining([...triggerableEvents]));
    for (const type of triggerableEvents) expect(recipeTable, type).toContain(`\`${type}\``);
  });

  it('trigger: each recipe that needs no worker records every event it names, in the sandbox only', async () => {
    const { recipes } = await import('../cli/triggers.ts');
    // The command itself, once, as a subprocess.
    const since = Date.now() - 1000;
    const result = await run(home, ['trigger', 'customer.updated', '--json']);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      triggered: 'customer.updated',
      events: ['customer.created', 'customer.updated'],
      created: { customer: expect.stringMatching(/^cus_/) },
    });
    for (const type of ['customer.created', 'customer.updated'])
      expect(await recordedSince(type, since), type).toBe(true);
    // Every other recipe in-process, through the API with a test CLI key as the command sends it (its scope applies).
    const call = await cliKeyCall();
    const elsewhere = ['customer.created', 'account.created'];
    for (const recipe of recipes.filter((r) => !r.needsWorker && !elsewhere.includes(r.events[0]!))) {
      const start = Date.now() - 1000;
      await recipe
        .run(call, `${Date.now().toString(36)}${recipe.events.length}`, engine.tenant.accountId, postForm, callAs)
        .catch((error) => {
          throw new Error(`recipe ${recipe.events.join(', ')}: ${error.message}`);
        });
      for (const type of recipe.events) expect(await recordedSince(type, start), type).toBe(true);
    }
    expect((await run(home, ['trigger', 'nothing.happened'])).code).toBe(2);
    const live = await run(home, ['trigger', 'customer.created', '--env', 'live']);
    expect(live.code).toBe(2);
    expect(live.stderr).toContain('sandbox only');
    // The test helpers behind the fault recipes refuse live mode, and make nothing there.
    const liveExport = await engine.call('POST', '/v1/test_helpers/exports', { resource: 'customers', format: 'csv' });
    expect(liveExport.status).toBe(400);
    expect(liveExport.body.error).toBe('livemode_not_allowed');
    expect((await engine.call('GET', '/v1/exports')).body.data).toEqual([]);
    const liveStall = await engine.call('POST', '/v1/test_helpers/test_clocks/clock_00000000000000000000000000/stall');
    expect(liveStall.status).toBe(400);
    expect(liveStall.body.error).toBe('livemode_not_allowed');
    // A quiet timeout out of its range, or a clock of no one, is refused in the spec's shape (the clock stays:
    // deleting it asks its workflow, which needs the worker).
    const clock = await call('POST', '/v1/test_clocks', { frozen_time: '2030-01-01T00:00:00Z' });
    for (const quiet_timeout of [0, 61, 1.5]) {
      const refused = await engine.call(
        'POST',
        `/v1/test_helpers/test_clocks/${clock.id}/stall`,
        { quiet_timeout },
        sandbox,
      );
      expect(refused.status, String(quiet_timeout)).toBe(400);
      expect(refused.body).toMatchObject({
        error: 'invalid_request',
        message: expect.stringContaining('quiet_timeout'),
      });
    }
    const other = await engine.call(
      'POST',
      '/v1/test_helpers/test_clocks/clock_00000000000000000000000000/stall',
      {},
      sandbox,
    );
    expect(other.status).toBe(404);
  });

  it("trigger account.closed: a throwaway account signed up and closed, its events in it and not in the CLI key's", async () => {
    const result = await run(home, ['trigger', 'account.closed', '--json']);
    expect(result.code, result.stderr).toBe(0);
    const { events, created, note } = JSON.parse(result.stdout);
    expect(events).toEqual(['account.created', 'account.closed']);
    expect(created).toEqual({
      account: expect.stringMatching(/^acct_/),
      account_created_event: expect.stringMatching(/^evt_/),
    });
    expect(note).toContain('not in the account this CLI is logged in to');
    expect(created.account).not.toBe(engine.tenant.accountId);
    // The platform admin reads the closed account's events; the CLI key's account has neither.
    const admin = await engine.admin();
    const eventsOf = async (type: string, headers: Record<string, string>) =>
      (await engine.call('GET', `/v1/events?type=${type}`, undefined, { ...headers, ...sandbox })).body.data as {
        id: string;
        data: { object: { id: string; status: string } };
      }[];
    const asAdmin = { ...admin.headers, 'x-account-id': created.account };
    const createdEvents = await eventsOf('account.created', asAdmin);
    expect(createdEvents.map((e) => e.id)).toEqual([created.account_created_event]);
    expect(createdEvents[0]!.data.object.id).toBe(created.account);
    const closedEvents = await eventsOf('account.closed', asAdmin);
    expect(closedEvents).toHaveLength(1);
    expect(closedEvents[0]!.data.object).toMatchObject({ id: created.account, status: 'closed' });
    for (const type of ['account.created', 'account.closed'])
      expect((await eventsOf(type, {})).map((e) => e.data.object.id)).not.toContain(created.account);
    // The human output says where the events are.
    const human = await run(home, ['trigger', 'account.created']);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/Created account acct_\w+/);
    expect(human.stdout).toContain('in the new throwaway account');
  });

  it('trigger invoice.paid: a subscription whose first invoice is paid by the worker', async () => {
    await engine.startWorker();
    try {
      const result = await run(home, ['trigger', 'invoice.paid', '--json']);
      expect(result.code).toBe(0);
      const { created } = JSON.parse(result.stdout);
      expect(created).toMatchObject({
        customer: expect.stringMatching(/^cus_/),
        plan: expect.stringMatching(/^plan_/),
        subscription: expect.stringMatching(/^sub_/),
        invoice: expect.stringMatching(/^inv_/),
      });
      const paid = await engine.call('GET', '/v1/events?type=invoice.paid', undefined, sandbox);
      expect(paid.body.data.map((e: { data: { object: { id: string } } }) => e.data.object.id)).toContain(
        created.invoice,
      );
      const subs = await engine.call('GET', '/v1/events?type=subscription.created', undefined, sandbox);
      expect(subs.body.data.map((e: { data: { object: { id: string } } }) => e.data.object.id)).toContain(
        created.subscription,
      );
      const since = Date.now() - 1000;
      const lifecycle = await run(home, ['trigger', 'subscription.paused', '--json']);
      expect(lifecycle.code, lifecycle.stderr).toBe(0);
      for (const type of [
        'subscription.plan_changed',
        'subscription.updated',
        'subscription.paused',
        'subscription.resumed',
        'subscription.canceled',
      ])
        expect(await recordedSince(type, since), type).toBe(true);
      const clock = await run(home, ['trigger', 'test_clock.deleted', '--json']);
      expect(clock.code, clock.stderr).toBe(0);
      for (const type of ['test_clock.created', 'test_clock.deleted'])
        expect(await recordedSince(type, since), type).toBe(true);
      // The other recipes that need the worker, in-process with a test CLI key.
      const { recipes } = await import('../cli/triggers.ts');
      const call = await cliKeyCall();
      const runAbove = ['invoice.paid', 'subscription.paused', 'test_clock.deleted'];
      for (const recipe of recipes.filter((r) => r.needsWorker && !r.events.some((type) => runAbove.includes(type)))) {
        const start = Date.now() - 1000;
        await recipe.run(call, Date.now().toString(36), engine.tenant.accountId, postForm, callAs).catch((error) => {
          throw new Error(`recipe ${recipe.events.join(', ')}: ${error.message}`);
        });
        // A workflow may record the last event a moment after the API answered (a recurring request's cancel).
        for (const type of recipe.events) await until(type, () => recordedSince(type, start), 20_000);
      }
      // The faults ran the engine's own failure paths: the writer's error, the clock's quiet timeout.
      const failedExport = (await engine.call('GET', '/v1/events?type=export.failed', undefined, sandbox)).body.data[0];
      expect(failedExport.data.object).toMatchObject({
        status: 'failed',
        error: expect.stringContaining('no space left on device'),
      });
      const failedClock = (await engine.call('GET', '/v1/events?type=test_clock.internal_failure', undefined, sandbox))
        .body.data[0];
      expect(failedClock.data.object).toMatchObject({
        status: 'internal_failure',
        status_details: {
          internal_failure: {
            message: expect.stringMatching(/1 workflow\(s\) did not finish .* within 2 s: stalled_by_test_helper/),
          },
        },
      });
    } finally {
      await engine.stopWorker();
    }
  });

  it('test clocks: create, advance until ready, list and delete from the terminal', async () => {
    // The clock's own workflow needs the worker (started for this test, as trigger invoice.paid does).
    await engine.startWorker();
    try {
      const created = await run(home, [
        'test-clocks',
        'create',
        '-d',
        'frozen_time=2027-01-01T00:00:00Z',
        '-d',
        'name=CLI clock',
        '--json',
      ]);
      expect(created.code, created.stderr).toBe(0);
      const clock = JSON.parse(created.stdout);
      expect(clock).toMatchObject({ id: expect.any(String), name: 'CLI clock', status: 'ready', livemode: false });
      const customer = JSON.parse(
        (
          await run(home, [
            'customers',
            'create',
            '--email',
            'clock@example.com',
            '-d',
            `test_clock=${clock.id}`,
            '--json',
          ])
        ).stdout,
      );
      expect(customer.test_clock).toBe(clock.id);
      // --wait: progress on stderr until the clock is ready, then the clock on stdout.
      const advanced = await run(home, [
        'test-clocks',
        'advance',
        clock.id,
        '-d',
        'frozen_time=2027-02-01T00:00:00Z',
        '--wait',
        '--json',
      ]);
      expect(advanced.code, advanced.stderr).toBe(0);
      expect(advanced.stderr).toContain(`test clock ${clock.id} advancing to 2027-02-01T00:00:00.000Z`);
      expect(JSON.parse(advanced.stdout)).toMatchObject({ status: 'ready', frozen_time: '2027-02-01T00:00:00.000Z' });
      expect(JSON.parse((await run(home, ['test-clocks', 'get', clock.id, '--json'])).stdout)).toMatchObject({
        status: 'ready',
        frozen_time: '2027-02-01T00:00:00.000Z',
      });
      // An export waited for the same way, its rows counted on stderr.
      const exported = await run(home, [
        'exports',
        'create',
        '-d',
        'resource=customers',
        '-d',
        'format=csv',
        '--wait',
        '--json',
      ]);
      expect(exported.code, exported.stderr).toBe(0);
      expect(exported.stderr).toMatch(/export exp_\w+ succeeded: \d+ of \d+ rows/);
      expect(JSON.parse(exported.stdout)).toMatchObject({ status: 'succeeded', row_count: expect.any(Number) });
      expect(
        JSON.parse((await run(home, ['test-clocks', 'list', '--json'])).stdout).data.map((c: { id: string }) => c.id),
      ).toContain(clock.id);
      expect((await run(home, ['test-clocks', 'delete', clock.id, '--json'])).code).toBe(0);
      expect((await run(home, ['test-clocks', 'get', clock.id, '--json'])).code).toBe(4);
    } finally {
      await engine.stopWorker();
    }
  });

  it("logs tail streams the account's requests with their source, filtered", async () => {
    const tail = start(home, ['logs', 'tail', '--path', '/v1/customers', '--status', '2xx']);
    try {
      await until('the tail to start', () => tail.err().includes('Tailing'));
      await engine.call('GET', '/v1/plans', undefined, sandbox);
      await engine.call('GET', '/v1/customers/cus_00000000000000000000000000', undefined, sandbox);
      expect((await run(home, ['customers', 'list'])).code).toBe(0);
      const line = await until('a request line', () =>
        tail
          .out()
          .split('\n')
          .find((l) => l.includes('/v1/customers')),
      );
      expect(line).toMatch(/ 200 {2}GET +\/v1\/customers {2}\S+ {2}\d+ ms {2}\[cli\]/);
      await new Promise((r) => setTimeout(r, 200));
      expect(tail.out()).not.toContain('/v1/plans');
      expect(tail.out()).not.toContain(' 404 ');
    } finally {
      tail.kill('SIGINT');
      await tail.done;
    }
  });

  it('the CLI key is listed with the API keys and revocable there; logout revokes its own key', async () => {
    const keyId = configOf(home).key.id as string;
    const listed = await engine.call('GET', '/v1/api_keys');
    expect(listed.body.data).toContainEqual(
      expect.objectContaining({
        id: keyId,
        type: 'cli',
        name: `${engine.tenant.email} on ci-laptop`,
        redacted_secret: expect.stringMatching(/^ck_test_…/),
      }),
    );
    expect((await engine.call('DELETE', `/v1/api_keys/${keyId}`)).status).toBe(200);
    const after = await run(home, ['whoami']);
    expect(after.code).toBe(3);
    expect((await engine.call('GET', '/v1/api_keys')).body.data.map((k: { id: string }) => k.id)).not.toContain(keyId);

    const other = newHome();
    expect((await deviceLogin(other)).code).toBe(0);
    const otherKey = configOf(other).key;
    expect((await run(other, ['logout'])).code).toBe(0);
    expect(configOf(other).key).toBeUndefined();
    expect(
      (await engine.call('GET', '/v1/customers', undefined, { authorization: '', 'x-cli-key': otherKey.secret }))
        .status,
    ).toBe(401);
  });

  /** The dashboard's session cookies of a sign-in (POST /v1/auth/browser_session), as a Cookie header. */
  async function dashboardCookies(email: string, password: string): Promise<string> {
    const signIn = await engine.app.request('/v1/auth/browser_session', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });
    expect(signIn.status).toBe(200);
    return signIn.headers
      .getSetCookie()
      .map((cookie) => cookie.split(';')[0])
      .join('; ');
  }

  it('the approve page: one click for an owner signed in to the dashboard (its session cookie and CSRF token), same origin only', async () => {
    const pending = await engine.call('POST', '/v1/cli/device', { name: 'page' }, { authorization: '' });
    const code = pending.body.user_code as string;
    // Signed out: the code, and a way to sign in that comes back here; no approval, no token to paste.
    const signedOut = await engine.app.request(`/cli/approve?code=${code.toLowerCase()}`);
    const outPage = await signedOut.text();
    expect(outPage).toContain(code);
    expect(outPage).toContain(`/dashboard/?next=${encodeURIComponent(`/cli/approve?code=${code}`)}`);
    expect(outPage).not.toContain('name="csrf_token"');
    expect(outPage).not.toContain('access_token');
    expect(outPage).not.toContain('Secure payment page');

    const owner = await dashboardCookies(engine.tenant.email, engine.tenant.password);
    const form = await engine.app.request(`/cli/approve?code=${code.toLowerCase()}`, { headers: { cookie: owner } });
    expect(form.status).toBe(200);
    const page = await form.text();
    expect(page).toContain(`value="${code}"`);
    expect(page).toContain(engine.tenant.email);
    expect(page).toContain('<dd>page</dd>');
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(page)![1]!;
    const post = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
      engine.app.request('/cli/approve', {
        method: 'POST',
        body: new URLSearchParams(fields),
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      });
    expect((await post({ user_code: code, mode: 'test', csrf_token: csrf })).status).toBe(401);
    expect((await post({ user_code: code, mode: 'test', csrf_token: 'forged' }, { cookie: owner })).status).toBe(403);
    expect(
      (
        await post(
          { user_code: code, mode: 'test', csrf_token: csrf },
          { cookie: owner, 'sec-fetch-site': 'cross-site' },
        )
      ).status,
    ).toBe(403);
    const member = await engine.call('POST', '/v1/users', {
      email: `member-${Date.now()}@example.com`,
      password: 'Member!pass1',
      role: 'member',
    });
    expect(member.status).toBe(201);
    const memberCookies = await dashboardCookies(member.body.email, 'Member!pass1');
    expect((await engine.app.request(`/cli/approve?code=${code}`, { headers: { cookie: memberCookies } })).status).toBe(
      403,
    );
    expect((await post({ user_code: code, mode: 'test', csrf_token: csrf }, { cookie: memberCookies })).status).toBe(
      403,
    );
    expect(
      (await engine.call('POST', '/v1/cli/token', { device_code: pending.body.device_code }, { authorization: '' }))
        .body.error,
    ).toBe('authorization_pending');
    const approved = await post(
      { user_code: code, mode: 'test', csrf_token: csrf },
      { cookie: owner, 'sec-fetch-site': 'same-origin' },
    );
    expect(approved.status).toBe(200);
    expect(await approved.text()).toContain('CLI login approved');
    const key = await engine.call(
      'POST',
      '/v1/cli/token',
      { device_code: pending.body.device_code },
      { authorization: '' },
    );
    expect(key.status).toBe(200);
    expect(key.body).toMatchObject({
      type: 'cli',
      livemode: false,
      name: `${engine.tenant.email} on page`,
      secret: expect.stringMatching(/^ck_test_/),
    });
    // Approved once: the page says so instead of offering the form again.
    expect((await engine.app.request(`/cli/approve?code=${code}`, { headers: { cookie: owner } })).status).toBe(404);
    // A member may not approve through the API either.
    const again = await engine.call('POST', '/v1/cli/device', {}, { authorization: '' });
    expect(
      (
        await engine.call(
          'POST',
          '/v1/cli/device/approve',
          { user_code: again.body.user_code },
          (await engine.login(member.body.email, 'Member!pass1')).headers,
        )
      ).status,
    ).toBe(403);
  });

  it('CLI keys: expired keys are refused, use is noted, sessions and settings are out of reach', async () => {
    const minted = await engine.call('POST', '/v1/cli_keys', { name: 'box', mode: 'test' });
    expect(minted.status).toBe(201);
    const asCli = { authorization: '', 'x-cli-key': minted.body.secret };
    expect((await engine.call('GET', '/v1/settings', undefined, asCli)).status).toBe(403);
    expect((await engine.call('DELETE', '/v1/auth/session', undefined, asCli)).status).toBe(403);
    expect((await engine.call('GET', '/v1/customers', undefined, { ...asCli, 'x-sandbox-mode': 'false' })).status).toBe(
      400,
    );
    expect(
      (
        await engine.call('GET', '/v1/customers', undefined, {
          ...asCli,
          authorization: engine.tenant.headers.authorization!,
        })
      ).status,
    ).toBe(400);
    expect((await engine.call('GET', '/v1/customers', undefined, asCli)).status).toBe(200);
    const sql = engine.db.orm.em.fork().getConnection();
    const [row] = await sql.execute(
      `select last_used_at, expires_at - created_at as lifetime from cli_keys where id = ?`,
      [minted.body.id],
    );
    expect(row.last_used_at).not.toBeNull();
    expect(new Date(minted.body.expires_at).getTime() - new Date(minted.body.created_at).getTime()).toBe(
      90 * 86_400_000,
    );
    await sql.execute(`update cli_keys set expires_at = now() - interval '1 second' where id = ?`, [minted.body.id]);
    expect((await engine.call('GET', '/v1/customers', undefined, asCli)).status).toBe(401);
  });

  it('streams: the request log of another account or mode is not seen; at most 10 streams per account and mode', async () => {
    const key = (await engine.call('POST', '/v1/cli_keys', { name: 'streams', mode: 'test' })).body.secret as string;
    const controllers: AbortController[] = [];
    const open = async (path: string, headers: Record<string, string>) => {
      const controller = new AbortController();
      controllers.push(controller);
      return fetch(`${base}${path}`, { headers, signal: controller.signal });
    };
    try {
      const logs = await open('/v1/logs/stream', { 'x-cli-key': key });
      expect(logs.headers.get('content-type')).toContain('text/event-stream');
      const reader = logs.body!.getReader();
      let text = '';
      const reading = (async () => {
        for (;;) {
          const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
          if (done) return;
          text += new TextDecoder().decode(value);
        }
      })();
      const other = await engine.signUp();
      await engine.call('GET', '/v1/customers?limit=7', undefined, { ...other.headers, ...sandbox });
      await engine.call('GET', '/v1/customers?limit=8', undefined);
      await engine.call('GET', '/v1/customers?limit=9', undefined, sandbox);
      await until('the own request', () => text.includes('"path":"/v1/customers"'));
      expect(text.match(/event: request/g)).toHaveLength(1);
      expect(text).toContain('"source":"session"');
      for (let i = 0; i < 9; i++) expect((await open('/v1/events/stream', { 'x-cli-key': key })).status).toBe(200);
      const eleventh = await open('/v1/events/stream', { 'x-cli-key': key });
      expect(eleventh.status).toBe(200);
      const refused = await open('/v1/events/stream', { 'x-cli-key': key });
      expect(refused.status).toBe(429);
      expect((await open('/v1/events/stream?types=nothing.real', { 'x-cli-key': key })).status).toBe(400);
      void reading;
    } finally {
      for (const c of controllers) c.abort();
    }
  });

  it('the event stream sends an event committed late by another process once, and heartbeats while idle', async () => {
    const key = (await engine.call('POST', '/v1/cli_keys', { name: 'late', mode: 'test' })).body.secret as string;
    // The same engine, with a 100 ms heartbeat.
    const app = createApp({
      orm: engine.db.orm,
      temporal: engine.env.client,
      config: engine.config,
      logger: createLogger('silent'),
      sseHeartbeatMs: 100,
    });
    const controller = new AbortController();
    const response = await app.request('/v1/events/stream', {
      headers: { 'x-cli-key': key },
      signal: controller.signal,
    });
    const reader = response.body!.getReader();
    let text = '';
    const reading = (async () => {
      for (;;) {
        const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
        if (done) return;
        text += new TextDecoder().decode(value);
      }
    })();
    try {
      await until('a heartbeat', () => text.includes(': heartbeat'));
      const created = await engine.call('POST', '/v1/customers', { email: 'late@example.com' }, sandbox);
      const [first] = (await engine.call('GET', '/v1/events?type=customer.created&limit=1', undefined, sandbox)).body
        .data;
      expect(first.data.object.id).toBe(created.body.id);
      await until('the first event', () => text.includes(`id: ${first.id}`));
      // Stamped a second before the one sent, committed now (as a worker's event can be).
      const lateId = `evt_${ulid(Date.parse(first.created_at) - 1000).toLowerCase()}`;
      expect(lateId < first.id).toBe(true);
      await engine.db.orm.em
        .getConnection()
        .execute(
          `insert into events (id, account_id, livemode, type, transaction_id, data, created_at) values (?, ?, false, 'customer.updated', null, ?, now())`,
          [lateId, engine.tenant.accountId, JSON.stringify({ object: { ...created.body, name: 'Late' } })],
        );
      await until('the late event', () => text.includes(`id: ${lateId}`));
      await new Promise((r) => setTimeout(r, 600));
      expect(text.split(`id: ${lateId}`)).toHaveLength(2);
      expect(text.split(`id: ${first.id}`)).toHaveLength(2);
    } finally {
      controller.abort();
      await reader.cancel().catch(() => undefined);
      await reading;
    }
  });

  it('interactive login in a terminal (tmux), approved in chromium signed in to the dashboard: the code on screen, one click, "Logged in"', async () => {
    const { launchChromium, servePublicApi } = await import('./helpers/browser.ts');
    const { api, baseUrl } = await servePublicApi(engine);
    const browser = await launchChromium();
    const tmuxHome = newHome();
    const session = `billing-cli-${process.pid}`;
    const env = childEnv(tmuxHome, { BILLING_API_BASE: baseUrl });
    const command = `${Object.entries(env)
      .map(([k, v]) => `${k}='${v}'`)
      .join(' ')} '${process.execPath}' '${cliEntry}' login; sleep 30`;
    execFileSync('tmux', ['new-session', '-d', '-s', session, '-x', '160', '-y', '30', command]);
    try {
      const pane = () => execFileSync('tmux', ['capture-pane', '-p', '-t', session], { encoding: 'utf8' });
      const shown = await until(
        'the code and link on the pane',
        () => /login code is ([A-Z]{4}-[A-Z]{4})\s+Open (\S+\/cli\/approve\?code=[A-Z-]+)/.exec(pane()) ?? undefined,
      ).catch((error: Error) => {
        throw new Error(`${error.message}; the pane:\n${pane()}`);
      });
      const [, code, link] = shown;
      await until('the spinner', () => pane().includes('Waiting for approval'));
      // The owner follows the link in a browser: signed out, it sends them to the dashboard's sign-in, which brings them back.
      const page = await browser.newPage();
      await page.goto(link!);
      await page.getByRole('link', { name: 'Sign in to the dashboard' }).click();
      await page.getByLabel('Email').fill(engine.tenant.email);
      await page.getByLabel('Password').fill(engine.tenant.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: 'Approve' }).waitFor();
      expect(await page.getByLabel('Login code').textContent()).toBe(code);
      expect(await page.title()).toBe('Approve a CLI login');
      await page.getByRole('button', { name: 'Approve' }).click();
      await page.getByRole('heading', { name: 'CLI login approved' }).waitFor();
      const screen = await until('"Logged in" on the pane', () => (pane().includes('Logged in') ? pane() : undefined));
      expect(screen).toContain(`Logged in as ${engine.tenant.email}`);
      expect(screen).toContain('Approved');
    } finally {
      execFileSync('tmux', ['kill-session', '-t', session]);
      await browser.close();
      await api.close();
    }
  });
});
