import fs from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { freePort, freePortRun, isAlive } from '../dev/processes.ts';
import { resolveTemporalCli, resolveTemporalServer } from '../dev/tools.ts';
import { apiClient, type NpmStartSandbox, npmStartSandbox, temporalCli } from './helpers/npm-start.ts';
import { eventually } from './helpers/temporal.ts';

/**
 * `TEMPORAL_SERVER=postgres npm start`: the production-shaped local Temporal
 * (the real server v1.29.1, persisted in PostgreSQL over 4 history shards) under
 * the whole engine, as a user runs it: schemas set up on first start, the
 * namespace and search attributes registered, a subscription charged by the
 * worker, visibility queries on our search attributes, Ctrl-C, and a second
 * start on the same data.
 */
describe('npm start with the Temporal server on PostgreSQL', () => {
  let sandbox: NpmStartSandbox;
  let dataDir: string;
  let ports: { api: number; pg: number; temporal: number };
  let temporal: (...args: string[]) => string;
  let client: ReturnType<typeof apiClient>;

  beforeAll(async () => {
    // Built once per machine into the tools cache when missing (several minutes on 2 cores).
    await resolveTemporalServer();
    const resolved = await resolveTemporalCli();
    if (!('path' in resolved)) throw new Error('no Temporal CLI for the test');
    sandbox = npmStartSandbox('billing-start-pg-');
    dataDir = sandbox.dataDir;
    ports = { api: await freePort(), pg: await freePort(), temporal: await freePortRun(9) };
    temporal = temporalCli(resolved.path, ports.temporal);
    client = apiClient(ports.api);
  }, 1_800_000);

  afterAll(() => sandbox?.cleanUp());

  const npmStart = () =>
    sandbox.start({
      TEMPORAL_SERVER: 'postgres',
      PORT: String(ports.api),
      EMBEDDED_PG_PORT: String(ports.pg),
      TEMPORAL_PORT: String(ports.temporal),
    });
  const call = (method: string, p: string, body?: unknown) => client.call(method, p, body);
  const healthy = () => client.healthy();

  it(
    'sets Temporal up in PostgreSQL, charges a subscription, stops on Ctrl-C and restarts on the same data',
    { timeout: 300_000 },
    async () => {
      const first = npmStart();
      await eventually(healthy, (ok) => ok, 120_000).catch((error) => {
        throw new Error(`${(error as Error).message}\n${first.output()}`);
      });
      expect(first.output()).toContain('Starting the Temporal server on PostgreSQL');
      expect(first.output()).toContain(
        "setting up Temporal's schemas in PostgreSQL (temporal, temporal_visibility), 4 history shards",
      );
      // The server's own answer: persistence is PostgreSQL with 4 shards.
      const cluster = JSON.parse(temporal('operator', 'cluster', 'describe', '--output', 'json'));
      expect(cluster.persistenceStore).toBe('postgres12');
      expect(Number(cluster.historyShardCount)).toBe(4);

      expect(
        (
          await call('POST', '/v1/accounts', {
            email: 'owner@pg.example',
            name: 'PG Ltd',
            type: 'business',
            password: 'Grace!2345',
          })
        ).status,
      ).toBe(201);
      await client.signIn('owner@pg.example', 'Grace!2345');
      const customer = await call('POST', '/v1/customers', { email: 'pg@example.com', payment_method: 'pm_card_visa' });
      const plan = await call('POST', '/v1/plans', { name: 'Team', amount: 4900, currency: 'EUR', interval: 'month' });
      const created = await call('POST', '/v1/subscriptions', { customer_id: customer.body.id, plan: plan.body.id });
      expect(created.status).toBe(201);
      const id: string = created.body.id;
      // The worker charged the first invoice: a paid invoice with its payment transaction.
      const invoices = await eventually(
        async () => (await call('GET', `/v1/invoices?subscription=${id}`)).body.data as any[],
        (list) => list.length === 1 && list[0].status === 'paid',
        60_000,
      );
      expect(invoices[0].transaction).toMatch(/^txn_/);
      // Visibility in PostgreSQL answers queries on our search attributes.
      const listed = await eventually(
        async () =>
          temporal(
            'workflow',
            'list',
            '--query',
            `SubscriptionStatus = "active" AND CustomerId = "${customer.body.id}"`,
          ),
        (out) => out.includes(id),
        30_000,
      );
      expect(listed).toContain('Running');

      const serverPid = Number(fs.readFileSync(path.join(dataDir, 'temporal-server', 'temporal-server.pid'), 'utf8'));
      process.kill(-first.child.pid!, 'SIGINT');
      await eventually(
        async () => first.output(),
        (out) => out.includes('Stopped.'),
        60_000,
      );
      await eventually(
        async () => isAlive(serverPid),
        (alive) => !alive,
        30_000,
      );

      const second = npmStart();
      await eventually(healthy, (ok) => ok, 120_000);
      // Schemas already there: no second namespace registration, the workflow still running.
      expect(second.output()).not.toContain('registering namespace');
      const described = JSON.parse(temporal('workflow', 'describe', '--workflow-id', id, '--output', 'json'));
      expect(described.workflowExecutionInfo.status).toMatch(/RUNNING/);
      expect((await call('GET', `/v1/subscriptions/${id}`)).body.status).toBe('active');
      process.kill(-second.child.pid!, 'SIGTERM');
      await second.exit;
      await eventually(
        async () => second.output(),
        (out) => out.includes('Stopped.'),
        60_000,
      );
    },
  );
});
