import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { freePort, isAlive } from '../dev/processes.ts';
import { resolveTemporalCli } from '../dev/tools.ts';
import { apiClient, type NpmStartSandbox, npmStartSandbox, temporalCli } from './helpers/npm-start.ts';
import { eventually } from './helpers/temporal.ts';

/**
 * `npm start` as a user runs it: real processes, real ports, a terminal's Ctrl-C
 * (SIGINT to the whole process group), and a second start on the same data.
 */
describe('npm start', () => {
  let sandbox: NpmStartSandbox;
  let dataDir: string;
  let ports: { api: number; pg: number; temporal: number; ui: number };
  let temporal: (...args: string[]) => string;
  let client: ReturnType<typeof apiClient>;

  beforeAll(async () => {
    const resolved = await resolveTemporalCli();
    if (!('path' in resolved)) throw new Error('no Temporal CLI for the npm start test');
    sandbox = npmStartSandbox('billing-start-');
    dataDir = sandbox.dataDir;
    ports = { api: await freePort(), pg: await freePort(), temporal: await freePort(), ui: await freePort() };
    temporal = temporalCli(resolved.path, ports.temporal);
    client = apiClient(ports.api);
  }, 900_000);

  afterAll(() => sandbox?.cleanUp());

  const npmStart = () =>
    sandbox.start({
      PORT: String(ports.api),
      EMBEDDED_PG_PORT: String(ports.pg),
      TEMPORAL_PORT: String(ports.temporal),
      TEMPORAL_UI_PORT: String(ports.ui),
    });

  /** Pids still alive in a process group (ps, as a person would check). */
  const groupMembers = (pgid: number) =>
    execFileSync('ps', ['-eo', 'pid=,pgid=,stat=,comm='], { encoding: 'utf8' })
      .split('\n')
      .map((line) => line.trim().split(/\s+/))
      .filter(([, group, stat]) => Number(group) === pgid && !stat?.startsWith('Z'))
      .map(([pid, , , comm]) => `${pid} ${comm}`);
  const api = (p: string, init?: RequestInit) => client.api(p, init);
  const post = (p: string, body: unknown) => client.call('POST', p, body);
  const healthy = () => client.healthy();

  it(
    'runs the engine, survives Ctrl-C and a restart with its subscription and workflow intact',
    { timeout: 300_000 },
    async () => {
      const first = npmStart();
      const started = Date.now();
      await eventually(healthy, (ok) => ok, 60_000);
      const secondsToHealthy = (Date.now() - started) / 1000;
      console.log(`npm start: /health 200 after ${secondsToHealthy.toFixed(1)} s`);
      expect(secondsToHealthy).toBeLessThan(60);
      expect(first.output()).toContain(`API docs     http://localhost:${ports.api}/docs`);
      expect(first.output()).toContain(`Temporal UI  http://localhost:${ports.ui}`);
      expect((await api('/docs')).status).toBe(200);
      // The dashboard npm start built (or found fresh), served with its CSP.
      expect(first.output()).toContain(`Dashboard    http://localhost:${ports.api}/dashboard`);
      const dashboard = await api('/dashboard');
      expect(dashboard.status).toBe(200);
      expect(dashboard.headers.get('content-security-policy')).toContain("script-src 'self'");
      expect((await fetch(`http://127.0.0.1:${ports.ui}/`)).status).toBe(200);

      expect(
        (
          await post('/v1/accounts', {
            email: 'owner@grace.example',
            name: 'Grace Ltd',
            type: 'business',
            password: 'Grace!2345',
          })
        ).status,
      ).toBe(201);
      await client.signIn('owner@grace.example', 'Grace!2345');
      const customer = await post('/v1/customers', { email: 'grace@example.com', payment_method: 'pm_card_visa' });
      const plan = await post('/v1/plans', {
        name: 'Team',
        amount: 4900,
        currency: 'EUR',
        interval: 'month',
        trial_period_days: 14,
      });
      const created = await post('/v1/subscriptions', { customer_id: customer.body.id, plan: plan.body.id });
      expect(created.status).toBe(201);
      expect(created.body.status).toBe('trialing');
      const id: string = created.body.id;

      const listed = temporal(
        'workflow',
        'list',
        '--query',
        `SubscriptionStatus = "trialing" AND CustomerId = "${customer.body.id}"`,
      );
      expect(listed).toContain(id);
      expect(listed).toContain('Running');
      // The worker started its maintenance workflow (one per task queue).
      const maintenance = JSON.parse(
        temporal('workflow', 'describe', '--workflow-id', 'maintenance-billing', '--output', 'json'),
      );
      expect(maintenance.workflowExecutionInfo.status).toMatch(/RUNNING/);
      const maintenanceRun: string = maintenance.workflowExecutionInfo.execution.runId;

      // Ctrl-C: SIGINT to the process group. Everything stops, nothing is left behind.
      const temporalPid = Number(fs.readFileSync(path.join(dataDir, 'temporal', 'temporal.pid'), 'utf8'));
      const postgresPid = Number(
        fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0],
      );
      // (npm itself dies of the SIGINT at once, as in a terminal; the engine under it shuts down in order.)
      process.kill(-first.child.pid!, 'SIGINT');
      await eventually(
        async () => first.output(),
        (out) => out.includes('Stopped.'),
        30_000,
      );
      await eventually(
        async () => [isAlive(temporalPid), isAlive(postgresPid), await healthy()],
        (alive) => alive.every((a) => !a),
        15_000,
      );
      await eventually(
        async () => groupMembers(first.child.pid!),
        (members) => members.length === 0,
        15_000,
      );

      // A second start on the same data: the subscription is readable, its workflow still running.
      const second = npmStart();
      await eventually(healthy, (ok) => ok, 60_000);
      // The access token from before the restart still works: sessions live in the database.
      const read = await api(`/v1/subscriptions/${id}`, { headers: { authorization: client.authorization() } });
      expect(read.status).toBe(200);
      expect(await read.json()).toEqual(created.body);
      const described = temporal('workflow', 'describe', '--workflow-id', id, '--output', 'json');
      expect(JSON.parse(described).workflowExecutionInfo.status).toMatch(/RUNNING/);
      // The second boot found the maintenance workflow running and started no other.
      const maintenanceAgain = JSON.parse(
        temporal('workflow', 'describe', '--workflow-id', 'maintenance-billing', '--output', 'json'),
      );
      expect(maintenanceAgain.workflowExecutionInfo.execution.runId).toBe(maintenanceRun);
      expect(maintenanceAgain.workflowExecutionInfo.status).toMatch(/RUNNING/);

      // SIGTERM to the group, as systemd or a container runtime stops a service.
      process.kill(-second.child.pid!, 'SIGTERM');
      await second.exit;
      await eventually(
        async () => second.output(),
        (out) => out.includes('Stopped.'),
        30_000,
      );
      await eventually(
        async () => groupMembers(second.child.pid!),
        (members) => members.length === 0,
        15_000,
      );
    },
  );
});
