/**
 * What bench/renewals.ts and bench/scale-out.ts share: the infrastructure of a
 * renewals wave (a temporary folder, an embedded PostgreSQL with the engine's
 * schema, the Temporal dev server or the real server on PostgreSQL, the bench
 * workflow bundle), the worker process (bench/renewals-worker.ts) as the parent
 * sees it, and the engine's rows for a wave: one account, N customers, one plan,
 * N trialing subscriptions whose trial ends at T, and the money check afterwards.
 */
import { type ChildProcess, execFileSync, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import type { MikroORM } from '@mikro-orm/postgresql';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';

import { Account, Customer, Plan, Subscription } from '../db/entities/index.ts';
import { startEmbeddedPostgres } from '../dev/postgres.ts';
import { freePort, freePortRun } from '../dev/processes.ts';
import { startTemporalDevServer } from '../dev/temporal-dev-server.ts';
import { startTemporalServer } from '../dev/temporal-server.ts';
import { newId } from '../domain/ids.ts';
import {
  initialSnapshot,
  type ItemTerms,
  type PlanTerms,
  subscriptionItemId,
  type SubscriptionSnapshot,
} from '../domain/subscription.ts';
import { itemSnapshots, termsPrice } from '../domain/subscription-decisions.ts';
import { priceTerms } from '../services/subscriptions/terms.ts';
import { openBenchDatabase, type Say, sleep, type Stops } from './harness.ts';
import type { FromWorker, ToWorker, WorkerProcessOptions, WorkerStatusReport } from './renewals-worker.ts';

export const namespace = 'default';
export const planAmount = 1500;

// ---- Infrastructure ------------------------------------------------------------

export interface RenewalsInfrastructureOptions {
  /** The temporary folder's name prefix. */
  prefix: string;
  temporal: 'dev' | 'postgres';
  historyShards: number;
  /** The dev server's --sqlite-pragma values ([]: SQLite's rollback journal). */
  sqlitePragmas: string[];
  /** PostgreSQL with pg_stat_statements loaded and created in the engine's database (BENCH_PGSS). */
  statementStats?: boolean;
  say: Say;
  stops: Stops;
}

export interface RenewalsInfrastructure {
  tmpDir: string;
  onPostgres: boolean;
  postgres: Awaited<ReturnType<typeof startEmbeddedPostgres>>;
  temporal: { address: string; stop(): Promise<unknown> };
  bundlePath: string;
  databaseUrl: string;
  orm: MikroORM;
  pgVersion: string;
  client: Client;
}

/** Starts PostgreSQL and Temporal in a temporary folder and bundles bench/workflows; all of it stopped through `stops`. */
export async function startRenewalsInfrastructure(
  options: RenewalsInfrastructureOptions,
): Promise<RenewalsInfrastructure> {
  const tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), options.prefix));
  // As root, PostgreSQL runs as the postgres user, which must reach its folder.
  fs.chmodSync(tmpDir, 0o755);
  const removeTmpDir = () => fs.rmSync(tmpDir, { recursive: true, force: true });
  options.stops.add('temp folder', async () => removeTmpDir());
  process.once('exit', removeTmpDir);

  const onPostgres = options.temporal === 'postgres';
  options.say(
    `starting PostgreSQL and the Temporal ${onPostgres ? `server on PostgreSQL (${options.historyShards} history shards)` : 'dev server'}, bundling the workflows`,
  );
  const statementStats = options.statementStats
    ? {
        shared_preload_libraries: 'pg_stat_statements',
        'pg_stat_statements.track': 'all',
        // Planning time too: every statement the engine sends is planned again (no prepared statements).
        'pg_stat_statements.track_planning': 'on',
      }
    : undefined;
  const startingPostgres = freePort().then((port) =>
    startEmbeddedPostgres({ dataDir: path.join(tmpDir, 'postgres'), port, settings: statementStats }),
  );
  const [postgres, temporal, bundle] = await Promise.all([
    startingPostgres,
    onPostgres
      ? Promise.all([startingPostgres, freePortRun(9)]).then(([pg, port]) =>
          startTemporalServer({
            dataDir: path.join(tmpDir, 'temporal-server'),
            port,
            namespace,
            postgres: { host: '127.0.0.1', port: pg.port, user: 'postgres', password: 'postgres' },
            historyShards: options.historyShards,
            log: options.say,
          }),
        )
      : Promise.all([freePort(), freePort()]).then(([port, uiPort]) =>
          startTemporalDevServer({
            dataDir: path.join(tmpDir, 'temporal'),
            port,
            uiPort,
            namespace,
            log: options.say,
            // Explicit: [] is SQLite's rollback journal (this section's texts say which), not npm start's default.
            sqlitePragmas: options.sqlitePragmas,
          }),
        ),
    bundleWorkflowCode({
      workflowsPath: fileURLToPath(new URL('./workflows/index.ts', import.meta.url)),
      logger: { trace() {}, debug() {}, info() {}, warn: options.say, error: options.say, log() {} } as never,
    }),
  ]);
  options.stops.add('PostgreSQL', () => postgres.stop());
  options.stops.add('Temporal server', () => temporal.stop());
  const bundlePath = path.join(tmpDir, 'workflow-bundle.js');
  fs.writeFileSync(bundlePath, bundle.code);

  const { databaseUrl, orm, pgVersion } = await openBenchDatabase(postgres, options.stops);
  if (options.statementStats)
    await orm.em.fork().getConnection().execute('create extension if not exists pg_stat_statements');

  const connection = await Connection.connect({ address: temporal.address });
  options.stops.add('client connection', () => connection.close());
  const client = new Client({ connection, namespace });
  return { tmpDir, onPostgres, postgres, temporal, bundlePath, databaseUrl, orm, pgVersion, client };
}

// ---- The worker process --------------------------------------------------------

export class WorkerProcess {
  readonly child: ChildProcess;
  readonly #waiters: ((message: FromWorker) => boolean)[] = [];
  #exited = false;
  #failure: string | undefined;

  constructor(options: WorkerProcessOptions) {
    this.child = fork(fileURLToPath(new URL('./renewals-worker.ts', import.meta.url)), [JSON.stringify(options)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      // The worker's environment as the Dockerfile sets it: glibc's malloc arenas capped at 2 (unset, glibc gives the
      // SDK's many threads up to 8 arenas per core, each keeping the memory freed in it; the peak RSS of a 1,000 wave was
      // about 15% higher).
      env: { ...process.env, MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '2' },
      // The worker's heap cap as `npm run worker` and docker-compose.yml give it (worker.ts), unless the environment's
      // NODE_OPTIONS sets one; BENCH_WORKER_PROFILE=<folder>: a V8 CPU profile of each worker process (where its CPU
      // per renewal goes).
      execArgv: [
        ...process.execArgv,
        ...(process.env.NODE_OPTIONS?.includes('--max-old-space-size') ? [] : ['--max-old-space-size=384']),
        ...(options.nodeFlags ?? []),
        ...(process.env.BENCH_WORKER_PROFILE ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_WORKER_PROFILE] : []),
      ],
    });
    this.child.on('message', (message: FromWorker) => {
      if (message.type === 'failed') this.#failure = message.error;
      for (let i = 0; i < this.#waiters.length; i++) {
        if (this.#waiters[i]!(message)) this.#waiters.splice(i--, 1);
      }
    });
    this.child.once('exit', (code) => {
      this.#exited = true;
      this.#failure ??= code === 0 ? undefined : `the worker process exited with code ${code}`;
      for (const waiter of this.#waiters.splice(0))
        waiter({ type: 'failed', error: this.#failure ?? 'the worker process exited' });
    });
  }

  get failure(): string | undefined {
    return this.#failure;
  }

  #next<T extends FromWorker['type']>(type: T, timeoutMs: number): Promise<Extract<FromWorker, { type: T }>> {
    return new Promise((resolve, reject) => {
      if (this.#exited) return reject(new Error(this.#failure ?? 'the worker process has exited'));
      const timer = setTimeout(
        () => reject(new Error(`the worker process did not answer ${type} within ${timeoutMs} ms`)),
        timeoutMs,
      );
      this.#waiters.push((message) => {
        if (message.type === 'failed') {
          clearTimeout(timer);
          reject(new Error(`worker process: ${message.error}`));
          return true;
        }
        if (message.type !== type) return false;
        clearTimeout(timer);
        resolve(message as Extract<FromWorker, { type: T }>);
        return true;
      });
    });
  }

  #send(message: ToWorker): void {
    if (!this.#exited && this.child.connected) this.child.send(message);
  }

  ready(): Promise<{ pid: number }> {
    return this.#next('ready', 120_000);
  }

  async status(): Promise<WorkerStatusReport> {
    const answer = this.#next('status', 30_000);
    this.#send({ type: 'status' });
    return answer;
  }

  async stop(): Promise<Extract<FromWorker, { type: 'stopped' }>> {
    const answer = this.#next('stopped', 60_000);
    this.#send({ type: 'stop' });
    const stopped = await answer;
    await this.exited(10_000);
    return stopped;
  }

  /** Waits for the process to end; kills it after `timeoutMs`. */
  async exited(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.#exited && Date.now() < deadline) await sleep(50);
    if (!this.#exited) {
      this.child.kill('SIGKILL');
      while (!this.#exited) await sleep(50);
    }
  }

  async kill(): Promise<void> {
    if (this.#exited) return;
    this.child.kill('SIGTERM');
    await this.exited(15_000);
  }
}

/** Runs `fn` over `items`, `concurrency` at a time. */
export async function inParallel<T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

export interface EngineSeed {
  accountId: string;
  plan: PlanTerms;
  customers: string[];
}

/** The renewal wave's plan: 30-day periods, so period 0 can end exactly at T whatever the date. */
export const renewalInterval = { unit: 'day', count: 30 } as const;

/** One account, N customers paying with pm_card_visa, one plan billed every `interval` (default monthly): inserted directly. */
export async function seedEngine(
  orm: MikroORM,
  n: number,
  round: number,
  interval: PlanTerms['interval'] = { unit: 'month', count: 1 },
): Promise<EngineSeed> {
  const em = orm.em.fork();
  const now = new Date();
  const accountId = newId('account');
  em.create(Account, {
    id: accountId,
    email: `renewals-${round}-${randomBytes(3).toString('hex')}@example.com`,
    name: `Bench Renewals ${round}`,
    type: 'business',
    status: 'active',
    settings: { currency: 'USD', timezone: 'UTC', language: 'en' },
    createdAt: now,
    updatedAt: now,
  });
  const plan = em.create(Plan, {
    id: newId('plan'),
    name: 'Bench monthly',
    amount: planAmount,
    currency: 'USD',
    interval: interval.unit,
    intervalCount: interval.count,
    trialPeriodDays: 14,
    accountId,
    livemode: false,
    createdAt: now,
  });
  await em.flush();
  const customers = Array.from({ length: n }, (_, i) => ({
    id: newId('customer'),
    email: `customer${i}@renewals.example.com`,
    name: `Customer ${i}`,
    paymentMethod: 'pm_card_visa',
    accountId,
    livemode: false,
    createdAt: now,
    updatedAt: now,
  }));
  for (let i = 0; i < customers.length; i += 500) await em.insertMany(Customer, customers.slice(i, i + 500));
  return {
    accountId,
    plan: { planId: plan.id, name: plan.name, amount: plan.amount, currency: plan.currency, interval },
    customers: customers.map((c) => c.id),
  };
}

/**
 * Carried-over state (as a continue-as-new passes it): active in billing cycle 0 of a plan billed every
 * `renewalInterval`, which ends at T; the renewal at T charges cycle 1. The seed's plan must be billed so.
 */
export function renewingSnapshot(seed: EngineSeed, customerId: string, at: Date): SubscriptionSnapshot {
  const now = new Date().toISOString();
  const anchor = new Date(at.getTime() - renewalInterval.count * 86_400_000).toISOString();
  const fresh = initialSnapshot({
    id: newId('subscription'),
    accountId: seed.accountId,
    customerId,
    planId: seed.plan.planId,
    livemode: false,
    trialDays: 0,
    billingCycleMode: 'anniversary',
    pauseUntil: null,
    gracePeriodDays: null,
  });
  return {
    ...fresh,
    status: 'active',
    createdAt: now,
    updatedAt: now,
    billingAnchor: anchor,
    anchorCycle: 0,
    billingCycle: 0,
    currentPeriodStart: anchor,
    currentPeriodEnd: at.toISOString(),
    version: 2,
  };
}

/** Carried-over state: trialing since 14 days before T, the trial ending at T. */
export function trialingSnapshot(seed: EngineSeed, customerId: string, at: Date): SubscriptionSnapshot {
  const now = new Date().toISOString();
  const fresh = initialSnapshot({
    id: newId('subscription'),
    accountId: seed.accountId,
    customerId,
    planId: seed.plan.planId,
    livemode: false,
    trialDays: 14,
    billingCycleMode: 'anniversary',
    pauseUntil: null,
    gracePeriodDays: null,
  });
  return {
    ...fresh,
    createdAt: now,
    updatedAt: now,
    trialStart: new Date(at.getTime() - 14 * 86_400_000).toISOString(),
    trialEnd: at.toISOString(),
    version: 1,
  };
}

/** The projection rows the engine would have written when these subscriptions were created. */
export async function insertProjections(orm: MikroORM, snapshots: SubscriptionSnapshot[]): Promise<void> {
  const date = (iso: string | null) => (iso === null ? null : new Date(iso));
  const rows = snapshots.map((s) => ({
    id: s.id,
    accountId: s.accountId,
    customerId: s.customerId,
    planId: s.planId,
    status: s.status,
    trialStart: date(s.trialStart),
    trialEnd: date(s.trialEnd),
    currentPeriodStart: date(s.currentPeriodStart),
    currentPeriodEnd: date(s.currentPeriodEnd),
    billingAnchor: date(s.billingAnchor),
    billingCycle: s.billingCycle,
    trialDays: s.trialDays,
    billingCycleMode: s.billingCycleMode,
    cancelAtPeriodEnd: false,
    quantity: s.quantity ?? 1,
    ...(s.currency ? { currency: s.currency } : {}),
    items: s.items ?? null,
    livemode: s.livemode,
    version: s.version,
    createdAt: new Date(s.createdAt),
    updatedAt: new Date(s.updatedAt),
  }));
  const em = orm.em.fork();
  for (let i = 0; i < rows.length; i += 500) await em.insertMany(Subscription, rows.slice(i, i + 500));
}

export const engineDoneQuery = `
  select count(*)::int as n
    from subscriptions s
    join invoices i on i.id = s.latest_invoice_id
   where s.account_id = ? and s.status = 'active' and s.billing_cycle = ? and i.status = 'paid'`;

/**
 * The renewals must have billed right: N paid invoices, numbered 1..N without gaps, N succeeded charges of the plan's amount
 * (or `perRenewal`), summing to `total` (default N × perRenewal; a usage wave's renewals each charge their own usage).
 */
export async function checkEngineMoney(
  orm: MikroORM,
  accountId: string,
  n: number,
  perRenewal = planAmount,
  total = n * perRenewal,
): Promise<void> {
  const [row] = await orm.em
    .fork()
    .getConnection()
    .execute<{ paid: number; numbers: number; charges: number; amount: string }[]>(
      `select (select count(*)::int from invoices where account_id = ? and status = 'paid') as paid,
            (select count(distinct number)::int from invoices where account_id = ?) as numbers,
            (select count(*)::int from charges where account_id = ? and status = 'succeeded') as charges,
            (select coalesce(sum(amount), 0)::text from charges where account_id = ?) as amount`,
      [accountId, accountId, accountId, accountId],
    );
  const [counter] = await orm.em
    .fork()
    .getConnection()
    .execute<
      { last_number: number }[]
    >('select last_number from invoice_number_counters where account_id = ? and livemode = false', [accountId]);
  const problems = [
    row!.paid !== n && `${row!.paid} paid invoices`,
    row!.numbers !== n && `${row!.numbers} distinct invoice numbers`,
    Number(counter?.last_number) !== n && `the invoice counter at ${counter?.last_number}`,
    row!.charges !== n && `${row!.charges} succeeded charges`,
    Number(row!.amount) !== total && `charges summing to ${row!.amount} (expected ${total})`,
  ].filter(Boolean);
  if (problems.length > 0)
    throw new Error(`the engine's renewals billed wrong: expected ${n} of each, found ${problems.join(', ')}`);
}

/** Which code was measured: the commit, and whether the engine's files differed from it. */
export function codeState(): string {
  const git = (...args: string[]) =>
    execFileSync('git', args, { cwd: fileURLToPath(new URL('..', import.meta.url)), encoding: 'utf8' }).trim();
  try {
    const commit = git('rev-parse', '--short', 'HEAD');
    const changed = git('status', '--porcelain', '--', 'workflows', 'activities', 'domain', 'db', 'worker.ts')
      .split('\n')
      .filter(Boolean).length;
    return changed === 0
      ? `commit ${commit}`
      : `the working tree of commit ${commit} (${changed} uncommitted files under workflows/, activities/, domain/, db/)`;
  } catch {
    return 'code outside a git checkout';
  }
}

// ---- Several items per subscription (npm run bench:renewal-items) -----------------

/** The one-item wave's plan and the three-item wave's main item: 12 seats of a per_unit plan at 15.00. */
export const seatAmount = 1500;
export const seatQuantity = 12;

/** A subscription's recurring items, as the workflow bills them (`plan` is the first). */
export interface ItemsSeed extends EngineSeed {
  items: ItemTerms[] | null;
  /** What one renewal charges: the sum of the items' lines. */
  perRenewal: number;
}

/**
 * The rows of an item wave (inserted directly, as seedEngine): one account, N customers, and the plans, billed every
 * `renewalInterval`. `items` 1: each subscription is 12 seats of a per_unit plan (one item); 3: the same seats, a
 * graduated tiered API plan at 25 units (10 × 10.00, then 5.00 each, with a 20.00 flat fee on the second tier) and a
 * flat 5.00 add-on: three lines on every renewal invoice. The item terms come from the plans through priceTerms
 * (services/subscriptions/terms.ts), as POST /v1/subscriptions makes them.
 */
export async function seedItemsEngine(orm: MikroORM, n: number, round: number, itemCount: 1 | 3): Promise<ItemsSeed> {
  const seed = await seedEngine(orm, n, round, renewalInterval);
  const em = orm.em.fork();
  const now = new Date();
  const common = {
    currency: 'USD',
    interval: renewalInterval.unit,
    intervalCount: renewalInterval.count,
    trialPeriodDays: 0,
    accountId: seed.accountId,
    livemode: false,
    createdAt: now,
  };
  const seats = em.create(Plan, {
    ...common,
    id: newId('plan'),
    name: 'Seats',
    amount: seatAmount,
    pricingScheme: 'per_unit',
  });
  const api = em.create(Plan, {
    ...common,
    id: newId('plan'),
    name: 'API calls (graduated)',
    amount: 1000,
    pricingScheme: 'tiered',
    tiersMode: 'graduated',
    tiers: [
      { up_to: 10, unit_amount: 1000 },
      { up_to: 'inf', unit_amount: 500, flat_amount: 2000 },
    ],
  });
  const addOn = em.create(Plan, {
    ...common,
    id: newId('plan'),
    name: 'Priority support add-on',
    amount: 500,
    pricingScheme: 'per_unit',
  });
  await em.flush();
  const terms = (plan: Plan, quantity: number, index: number): ItemTerms => ({
    ...priceTerms(plan, { quantity }),
    interval: renewalInterval,
    // Ids are given per subscription (renewingItemsSnapshot).
    itemId: `item-${index}`,
  });
  const all = [terms(seats, seatQuantity, 0), terms(api, 25, 1), terms(addOn, 1, 2)].slice(0, itemCount);
  const perRenewal = all.reduce((sum, item) => sum + termsPrice(item).amount, 0);
  const { itemId: _, ...plan } = all[0]!;
  return { ...seed, plan, items: itemCount === 1 ? null : all, perRenewal };
}

/** The item wave's carried-over state: renewingSnapshot with the seats' quantity and, for several items, the items (ids per subscription). */
export function renewingItemsSnapshot(
  seed: ItemsSeed,
  customerId: string,
  at: Date,
): { snapshot: SubscriptionSnapshot; items: ItemTerms[] | undefined } {
  const base = renewingSnapshot(seed, customerId, at);
  const items = seed.items?.map((item, i) => ({
    ...item,
    itemId: i === 0 ? subscriptionItemId(base.id) : newId('subscriptionItem'),
  }));
  const snapshot: SubscriptionSnapshot = {
    ...base,
    quantity: seatQuantity,
    currency: 'USD',
    ...(items ? { items: itemSnapshots(items) } : {}),
  };
  return { snapshot, items };
}
