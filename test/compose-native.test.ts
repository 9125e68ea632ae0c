import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

import { freePort } from '../dev/processes.ts';
import { type RunningTemporal, startTemporalDevServer } from '../dev/temporal-dev-server.ts';
import {
  type ComposeFile,
  type ComposeService,
  durationMs,
  loadCompose,
  readDotenv,
  serviceEnvironment,
} from './helpers/compose.ts';
import { apiClient } from './helpers/npm-start.ts';
import { type SmtpCapture, startSmtpCapture } from './helpers/smtp.ts';
import { eventually } from './helpers/temporal.ts';

/**
 * `docker compose up` without a Docker engine (none runs where the tests run). The test reads
 * docker-compose.yml and .env.example as Compose does (test/helpers/compose.ts: dotenv, merge keys,
 * `${VAR:?error}` interpolation) and runs each engine service (those built from the Dockerfile:
 * worker, exports-worker, api) natively: its `command`, in the repository (the image's WORKDIR), with
 * the environment the container would get (the runtime stage's ENV, then the service's `environment`)
 * and nothing of this process's own. What a container network would resolve is mapped, and only that:
 *   - hosts: postgres:5432 → this run's embedded PostgreSQL, playing the postgres service as its image
 *     does (a superuser and a database from the service's POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB);
 *     temporal:7233 → a Temporal dev server (the CLI's, with the search attributes registered, as the
 *     temporal-search-attributes service does); mailpit:1025 → an SMTP server in this process;
 *   - the ports a service listens on inside its container (PORT, WORKER_HEALTH_PORT) → free local ports;
 *   - the export-files volume (/app/data/exports) → DATA_DIR/exports of a temporary DATA_DIR;
 *   - `node` → the Node.js 24 running this test (the image is node:24).
 * Services start in depends_on order and a service_healthy condition waits for the dependency's own
 * health check, run as Compose runs it (the `test` command in the container's environment), within
 * the time Compose gives it (start_period + retries × interval).
 */
const root = fileURLToPath(new URL('..', import.meta.url));
const envExample = readDotenv(fs.readFileSync(path.join(root, '.env.example'), 'utf8'));
const required = ['POSTGRES_PASSWORD', 'AUTH_SECRET', 'ADMIN_EMAIL', 'ADMIN_PASSWORD', 'LIVE_PROCESSOR'];

/** .env.example with what an operator fills in (live mode on the sandbox, as a demo: no Stripe here). */
const filledEnv = (): Record<string, string> => ({
  ...envExample,
  POSTGRES_PASSWORD: randomBytes(18).toString('hex'),
  AUTH_SECRET: randomBytes(36).toString('base64'),
  ADMIN_EMAIL: 'ops@compose.example',
  ADMIN_PASSWORD: 'Compose!2345',
  LIVE_PROCESSOR: 'sandbox',
  ALLOW_SANDBOX_LIVE: 'true',
});

/** The runtime stage's ENV and WORKDIR (the Dockerfile's last stage): what every engine container starts with. */
function imageDefaults(): { env: Record<string, string>; workdir: string; nodeMajor: string } {
  const text = fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8');
  const lastStage = text.slice(text.lastIndexOf('\nFROM '));
  const env: Record<string, string> = {};
  for (const [, pairs] of lastStage.matchAll(/^ENV\s+(.+)$/gm))
    for (const [, key, value] of pairs!.matchAll(/(\w+)=(\S+)/g)) env[key!] = value!;
  const workdir = [...lastStage.matchAll(/^WORKDIR\s+(\S+)$/gm)].at(-1)![1]!;
  const nodeMajor = /^FROM node:(\d+)/m.exec(lastStage.trimStart())![1]!;
  return { env, workdir, nodeMajor };
}

const engineServices = (compose: ComposeFile) =>
  Object.entries(compose.services).filter(([, service]) => service.build === '.');

/** The container's environment: the image's ENV, the service's `environment`, and the PATH and HOME a container has. */
function containerEnv(service: ComposeService): Record<string, string> {
  return { PATH: process.env.PATH!, HOME: os.homedir(), ...imageDefaults().env, ...serviceEnvironment(service) };
}

/** A service's command line, natively: `node` is this test's Node.js (24, as the image). */
const native = (argv: string[]) => (argv[0] === 'node' ? [process.execPath, ...argv.slice(1)] : argv);

interface Run {
  name: string;
  child: ChildProcess;
  output: () => string;
  exit: Promise<number | null>;
}

function startProcess(name: string, argv: string[], env: Record<string, string>): Run {
  const [command, ...args] = native(argv);
  const child = spawn(command!, args, { cwd: root, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { name, child, output: () => output, exit };
}

/** Runs a command to its end (with a timeout, as Compose's health check `timeout`); its exit code and output. */
async function runToEnd(
  argv: string[],
  env: Record<string, string>,
  timeoutMs: number,
): Promise<{ code: number | null; output: string }> {
  const run = startProcess('once', argv, env);
  const timer = setTimeout(() => run.child.kill('SIGKILL'), timeoutMs);
  const code = await run.exit;
  clearTimeout(timer);
  return { code, output: run.output() };
}

/** One run of a service's health check, as Compose runs it: its CMD in the service's environment, exit 0 = healthy. */
async function healthCheck(
  service: ComposeService,
  env: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  const [kind, ...argv] = service.healthcheck!.test;
  expect(kind, 'engine health checks are exec form (CMD), run without a shell').toBe('CMD');
  return runToEnd(argv, env, durationMs(service.healthcheck!.timeout, '30s'));
}

describe('docker compose up, natively: .env, health checks, and a subscription served by the API and the workers', () => {
  it('.env.example as shipped, or no .env at all, stops Compose before anything starts, naming every required value and .env', () => {
    for (const vars of [envExample, {}]) {
      const { errors } = loadCompose(vars);
      for (const [name] of engineServices(loadCompose(filledEnv()).value)) {
        for (const variable of required) {
          const error = errors.find(
            (e) =>
              e.startsWith(`error while interpolating services.${name}.environment.`) &&
              e.includes(`required variable ${variable} is missing a value`),
          );
          expect(error, `${name}: ${variable}`).toBeDefined();
          expect(error).toMatch(/ in \.env \(|\.env\.example/);
        }
      }
      // The database's password too: PostgreSQL and Temporal take it from .env.
      expect(
        errors.some(
          (e) =>
            e.startsWith('error while interpolating services.postgres.environment.POSTGRES_PASSWORD') &&
            e.includes('.env'),
        ),
      ).toBe(true);
      expect(
        errors.some(
          (e) =>
            e.startsWith('error while interpolating services.temporal.environment.POSTGRES_PWD') && e.includes('.env'),
        ),
      ).toBe(true);
    }
    expect(loadCompose(filledEnv()).errors).toEqual([]);
  });

  it('each engine service, started without the secrets (or with live mode on the sandbox unasked), refuses to start and names .env and .env.example', async () => {
    const compose = loadCompose(filledEnv()).value;
    const services = engineServices(compose);
    expect(services.map(([name]) => name).sort()).toEqual(['api', 'exports-worker', 'worker']);
    const cases = services.flatMap(([name, service]) => {
      const env = containerEnv(service);
      const withoutSecrets = { ...env };
      for (const key of ['AUTH_SECRET', 'ADMIN_EMAIL', 'ADMIN_PASSWORD']) delete withoutSecrets[key];
      return [
        {
          name,
          env: withoutSecrets,
          says: 'AUTH_SECRET, ADMIN_EMAIL, ADMIN_PASSWORD must be set when NODE_ENV=production.',
        },
        {
          name,
          env: { ...env, ALLOW_SANDBOX_LIVE: 'false' },
          says: 'Live mode would charge through the sandbox processor',
        },
      ].map((c) => ({ ...c, argv: service.command! }));
    });
    const results = await Promise.all(cases.map((c) => runToEnd(c.argv, c.env, 60_000)));
    for (const [i, c] of cases.entries()) {
      const { code, output } = results[i]!;
      expect(code, `${c.name}: ${output}`).toBe(1);
      expect(output).toContain(`Configuration: ${c.says}`);
      expect(output).toContain(
        'set these in .env (cp .env.example .env, then fill it in; docs/operations.md#docker-compose)',
      );
      // A message, not a stack trace.
      expect(output).not.toMatch(/\n\s+at /);
    }
  });

  describe('with .env filled in', () => {
    const vars = filledEnv();
    const { value: compose, errors } = loadCompose(vars);
    const { workdir, nodeMajor } = imageDefaults();
    let temporal: RunningTemporal | undefined;
    let smtp: SmtpCapture;
    let dataDir: string;
    let hosts: Record<string, string>;
    const runs: Run[] = [];
    const envs: Record<string, Record<string, string>> = {};
    let adminPool: pg.Pool | undefined;

    beforeAll(async () => {
      expect(errors).toEqual([]);
      expect(process.versions.node.split('.')[0], 'the Node.js the image runs').toBe(nodeMajor);
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-compose-'));
      // The postgres service, as its image sets itself up from its environment: a superuser and its database.
      const postgresEnv = serviceEnvironment(compose.services.postgres!);
      expect(postgresEnv.POSTGRES_PASSWORD).toBe(vars.POSTGRES_PASSWORD);
      const adminUrl = new URL(inject('postgresAdminUrl'));
      adminPool = new pg.Pool({ connectionString: adminUrl.href, max: 1 });
      const role = postgresEnv.POSTGRES_USER!;
      const database = postgresEnv.POSTGRES_DB!;
      await adminPool.query(
        `do $$ begin if not exists (select from pg_roles where rolname = '${role}') then create role ${role} login superuser; end if; end $$`,
      );
      await adminPool.query(`alter role ${role} password '${postgresEnv.POSTGRES_PASSWORD}'`);
      await adminPool.query(`drop database if exists ${database} with (force)`);
      await adminPool.query(`create database ${database} owner ${role}`);
      const [temporalPort, uiPort] = [await freePort(), await freePort()];
      [temporal, smtp] = await Promise.all([
        startTemporalDevServer({
          dataDir: path.join(dataDir, 'temporal'),
          port: temporalPort,
          uiPort,
          namespace: 'default',
          log: () => undefined,
        }),
        startSmtpCapture(),
      ]);
      hosts = {
        'postgres:5432': `127.0.0.1:${adminUrl.port}`,
        'temporal:7233': temporal.address,
        'mailpit:1025': new URL(smtp.url).host,
      };
      for (const [name, service] of engineServices(compose)) {
        const env = containerEnv(service);
        for (const [key, value] of Object.entries(env))
          env[key] = Object.entries(hosts).reduce((mapped, [host, local]) => mapped.replaceAll(host, local), value);
        // Ports the service listens on inside its container.
        for (const key of ['PORT', 'WORKER_HEALTH_PORT']) if (env[key]) env[key] = String(await freePort());
        // The export-files volume is DATA_DIR/exports (DATA_DIR's default, data/, under the image's WORKDIR).
        const volume = service.volumes!.find((v) => v.startsWith('export-files:'))!.split(':')[1]!;
        expect(path.posix.relative(workdir, volume)).toBe('data/exports');
        env.DATA_DIR = path.join(dataDir, 'data');
        // Nothing left that only a container network resolves.
        expect(
          Object.values(env).filter((v) => /\b(postgres|temporal|mailpit):\d+/.test(v)),
          name,
        ).toEqual([]);
        envs[name] = env;
      }
    }, 120_000);

    afterAll(async () => {
      for (const run of runs) {
        try {
          process.kill(-run.child.pid!, 'SIGKILL');
        } catch {
          /* already gone */
        }
      }
      await Promise.all(runs.map((run) => run.exit));
      await temporal?.stop();
      await smtp?.close();
      await adminPool?.end();
      if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    }, 60_000);

    /** Waits for a service's health check to pass, within the time Compose allows before calling it unhealthy. */
    async function waitHealthy(name: string) {
      const service = compose.services[name]!;
      const run = runs.find((r) => r.name === name)!;
      const check = service.healthcheck!;
      const allowedMs = durationMs(check.start_period, '0s') + (check.retries ?? 3) * durationMs(check.interval, '30s');
      const started = Date.now();
      let last = { code: null as number | null, output: '' };
      while (Date.now() - started < allowedMs) {
        if (run.child.exitCode !== null)
          throw new Error(`${name} exited (${run.child.exitCode}) before its health check passed:\n${run.output()}`);
        last = await healthCheck(service, envs[name]!);
        if (last.code === 0) return Date.now() - started;
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
      throw new Error(
        `${name} not healthy within ${allowedMs} ms (last check: ${last.code} ${last.output}):\n${run.output()}`,
      );
    }

    it(
      'the worker, the exports worker and the API start in depends_on order, pass their health checks, and serve a subscription and an export',
      { timeout: 300_000 },
      async () => {
        // Start order from depends_on: a service starts once its engine dependencies meet their conditions.
        const pending = engineServices(compose).map(([name]) => name);
        const timings: Record<string, number> = {};
        while (pending.length) {
          const ready = pending.filter((name) =>
            Object.keys(compose.services[name]!.depends_on ?? {}).every((dep) => !pending.includes(dep)),
          );
          expect(ready.length, `a depends_on cycle among ${pending.join(', ')}`).toBeGreaterThan(0);
          for (const name of ready) {
            for (const [dep, { condition }] of Object.entries(compose.services[name]!.depends_on ?? {})) {
              if (!runs.some((r) => r.name === dep)) continue; // postgres, temporal, temporal-search-attributes: played by this test
              expect(condition, `${name} waits for ${dep}`).toBe('service_healthy');
              timings[dep] ??= await waitHealthy(dep);
            }
            runs.push({ ...startProcess(name, compose.services[name]!.command!, envs[name]!), name });
            pending.splice(pending.indexOf(name), 1);
          }
        }
        for (const run of runs) timings[run.name] ??= await waitHealthy(run.name);
        console.log(`compose-native: ms waited for each health check to pass ${JSON.stringify(timings)}`);

        // The workers' health is a real signal: what polls, and what answers.
        const health = async (name: string) =>
          (await (await fetch(`http://127.0.0.1:${envs[name]!.WORKER_HEALTH_PORT}/health`)).json()) as {
            status: string;
            workers: Record<string, unknown>;
          };
        expect(await health('worker')).toMatchObject({
          status: 'ok',
          workers: {
            billing: { ok: true, state: 'RUNNING', workflow_poller: 'POLLING', activity_poller: 'POLLING' },
            clocks: { ok: true, state: 'RUNNING' },
          },
          database: { ok: true },
          temporal: { ok: true },
        });
        // WORKER_EXPORTS=false: the worker leaves exports to the exports worker.
        expect(Object.keys((await health('worker')).workers).sort()).toEqual(['billing', 'clocks']);
        expect(await health('exports-worker')).toMatchObject({
          status: 'ok',
          workers: { exports: { ok: true, state: 'RUNNING', activity_poller: 'POLLING' } },
        });

        // Over real HTTP against the API process: the admin from .env, a merchant, a subscription the worker charges.
        const client = apiClient(Number(envs.api!.PORT));
        const admin = await client.call('POST', '/v1/auth/login', {
          email: vars.ADMIN_EMAIL,
          password: vars.ADMIN_PASSWORD,
        });
        expect(admin.status, JSON.stringify(admin.body)).toBe(200);
        const signUp = await client.call('POST', '/v1/accounts', {
          email: 'owner@compose.example',
          name: 'Compose Ltd',
          type: 'business',
          password: 'Compose!2345',
        });
        expect(signUp.status, JSON.stringify(signUp.body)).toBe(201);
        await client.signIn('owner@compose.example', 'Compose!2345');
        const customer = await client.call('POST', '/v1/customers', {
          email: 'ada@compose.example',
          payment_method: 'pm_card_visa',
        });
        expect(customer.status, JSON.stringify(customer.body)).toBe(201);
        const plan = await client.call('POST', '/v1/plans', {
          name: 'Pro',
          amount: 2500,
          currency: 'USD',
          interval: 'month',
        });
        const trialPlan = await client.call('POST', '/v1/plans', {
          name: 'Trial',
          amount: 900,
          currency: 'USD',
          interval: 'month',
          trial_period_days: 14,
        });
        const created = await client.call('POST', '/v1/subscriptions', {
          customer_id: customer.body.id,
          plan: plan.body.id,
        });
        expect(created.status, JSON.stringify(created.body)).toBe(201);
        const trialing = await client.call('POST', '/v1/subscriptions', {
          customer_id: customer.body.id,
          plan: trialPlan.body.id,
        });
        expect(trialing.status, JSON.stringify(trialing.body)).toBe(201);
        expect(trialing.body.status).toBe('trialing');
        // The worker process runs the workflow: the first invoice charged and paid, the subscription active.
        const invoices = await eventually(
          async () =>
            (await client.call('GET', `/v1/invoices?subscription=${created.body.id}`)).body.data as {
              status: string;
              transaction: string | null;
              amount_paid?: number;
            }[],
          (list) => list.length === 1 && list[0]!.status === 'paid',
          60_000,
        );
        expect(invoices[0]!.transaction).toMatch(/^txn_/);
        expect((await client.call('GET', `/v1/subscriptions/${created.body.id}`)).body.status).toBe('active');
        expect((await client.call('GET', `/v1/subscriptions/${trialing.body.id}`)).body.status).toBe('trialing');

        // An export: the workflow on the worker, its file written by the exports worker into the shared volume, served by the API.
        const exported = await client.call('POST', '/v1/exports', {
          resource: 'transactions',
          format: 'csv',
          columns: ['id', 'amount'],
        });
        expect(exported.status, JSON.stringify(exported.body)).toBe(202);
        const done = await eventually(
          async () => (await client.call('GET', `/v1/exports/${exported.body.id}`)).body,
          (body) => body.status !== 'pending' && body.status !== 'running',
          60_000,
        );
        expect(done.status, JSON.stringify(done)).toBe('succeeded');
        const file = await client.api(`/v1/exports/${exported.body.id}/file`, {
          headers: { authorization: client.authorization() },
        });
        expect(file.status).toBe(200);
        expect(await file.text()).toContain(`${invoices[0]!.transaction},2500`);
        expect(fs.readdirSync(path.join(dataDir, 'data', 'exports'), { recursive: true }).length).toBeGreaterThan(0);
        expect(runs.find((r) => r.name === 'exports-worker')!.output()).toContain('exports worker running');

        // The health checks say so when Temporal is gone: not a process-alive probe.
        await temporal!.stop();
        temporal = undefined;
        for (const run of runs) {
          await eventually(
            () => healthCheck(compose.services[run.name]!, envs[run.name]!),
            (result) => result.code !== 0,
            30_000,
          );
        }
      },
    );
  });
});
