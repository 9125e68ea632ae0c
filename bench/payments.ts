/**
 * Benchmark: `POST /v1/transactions` (a payment with the sandbox card `pm_card_visa`)
 * and `GET /v1/balance`, requests per second on the engine, each against a bare Hono
 * route on the same connection pool doing the same SQL, measured in the same run.
 *
 *   npm run bench:payments        (or: node bench/payments.ts)
 *
 * A card payment that succeeds starts its money's availability workflow
 * (fundsAvailabilityWorkflow, one Temporal `StartWorkflowExecution` per payment), so
 * this benchmark runs a real Temporal dev server (`temporal server start-dev`, in a
 * temporary folder) and both targets start that workflow through the same client. No
 * worker runs: the workflows wait on the task queue, as they would behind a busy
 * worker; the measured request ends once Temporal has accepted the start, as in
 * production.
 *
 * The bare payment route is not hand-written SQL: it calls the same service function
 * as the engine's route (services/money/payments.ts payByCard: the attempt recorded
 * pending with its risk score, the sandbox processor's charge, its outcome recorded),
 * so both run the same statements; what the ratio measures is
 * the HTTP layer around them (middleware, authentication, idempotency pass-through, zod
 * validation, OpenAPI routing). The bare balance route runs the credential query and
 * one `select … from account_balances`, serialized by the same serializer.
 *
 * Writes its section of bench/RESULTS.md (BENCH_WRITE=0 prints it instead). Exits 1
 * if any request answered other than 2xx or the books do not add up afterwards.
 * BENCH_DURATION and BENCH_WARMUP (seconds) and BENCH_ROUNDS shorten or lengthen a run.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import type { MikroORM } from '@mikro-orm/postgresql';
import { Client, Connection } from '@temporalio/client';
import type { Context } from 'hono';
import { Hono } from 'hono';

import type { Config } from '../config.ts';
import { freePort } from '../dev/processes.ts';
import { startTemporalDevServer } from '../dev/temporal-dev-server.ts';
import { serializeBalance } from '../objects/balance.ts';
import { serializeTransaction } from '../objects/transaction.ts';
import { payByCard } from '../services/money/payments.ts';
import { sandboxProcessors } from '../services/processors/index.ts';
import {
  allSucceeded,
  bareCaller,
  call,
  compare,
  comparisonLines,
  describeMachine,
  resultsFile,
  runBenchmark,
  type Say,
  sayComparison,
  settingsFromEnv,
  signUp,
  startEnvironment,
  writeSection,
} from './harness.ts';

const sectionHeading = '## Payments and balance: POST /v1/transactions (payment, pm_card_visa) and GET /v1/balance';
const paymentAmount = 500;

const balanceSql = `select currency, available, pending from account_balances where account_id = ? and livemode = ?`;

function bareApp(orm: MikroORM, config: Config, temporal: Client): Hono {
  const app = new Hono();
  const processors = sandboxProcessors(() => orm.em.fork());
  const payments = { orm, processors, temporal: { client: temporal, taskQueue: config.taskQueue } };
  const caller = (c: Context) => bareCaller(orm, c);
  const unauthorized = (c: Context) => c.json({ error: 'unauthorized', message: 'Invalid or revoked API key.' }, 401);

  app.post('/v1/transactions', async (c) => {
    const key = await caller(c);
    if (!key) return unauthorized(c);
    const body = await c.req.json<{
      account_id: string;
      amount: number;
      currency: string;
      type: string;
      payment_method: string;
    }>();
    if (
      body.account_id !== key.account_id ||
      body.type !== 'payment' ||
      !Number.isInteger(body.amount) ||
      body.amount <= 0 ||
      typeof body.payment_method !== 'string'
    ) {
      return c.json(
        { error: 'invalid_request', message: "This route only takes a payment on the caller's account." },
        400,
      );
    }
    const result = await payByCard(
      payments,
      {
        accountId: key.account_id,
        livemode: key.livemode,
        amount: body.amount,
        currency: body.currency,
        reference: null,
        metadata: {},
        paymentMethod: body.payment_method,
      },
      { owner: { createdAt: new Date(key.created_at) } },
    );
    return c.json(serializeTransaction(result), 201);
  });

  app.get('/v1/balance', async (c) => {
    const key = await caller(c);
    if (!key) return unauthorized(c);
    const rows = await orm.em
      .getConnection()
      .execute<{ currency: string; available: number; pending: number }[]>(balanceSql, [key.account_id, key.livemode]);
    return c.json(serializeBalance(rows, key.livemode));
  });
  return app;
}

async function tenantWithKey(engineBase: string, name: string) {
  const tenant = await signUp(engineBase, name);
  const key = await call(
    'POST',
    `${engineBase}/v1/api_keys`,
    { name: 'bench', mode: 'test' },
    { authorization: `Bearer ${tenant.accessToken}` },
  );
  if (key.status !== 201) throw new Error(`API key failed (${key.status}): ${JSON.stringify(key.body)}`);
  return { accountId: tenant.accountId, headers: { authorization: `Bearer ${String(key.body!.secret)}` } };
}

const paymentBody = (accountId: string) =>
  JSON.stringify({
    account_id: accountId,
    amount: paymentAmount,
    currency: 'USD',
    type: 'payment',
    payment_method: 'pm_card_visa',
  });

/** Succeeded payments, the pending balance, and the sum of all ledger entries of one account. */
async function books(orm: MikroORM, accountId: string) {
  const [row] = await orm.em
    .getConnection()
    .execute<{ payments: number; other: number; pending: number; imbalance: number }[]>(
      `select (select count(*)::int from transactions where account_id = ? and type = 'payment' and status = 'succeeded') as payments,
            (select count(*)::int from transactions where account_id = ? and not (type = 'payment' and status = 'succeeded')) as other,
            (select coalesce(sum(pending), 0)::int from account_balances where account_id = ?) as pending,
            (select coalesce(sum(amount), 0)::int from ledger_entries where account_id = ?) as imbalance`,
      [accountId, accountId, accountId, accountId],
    );
  return row!;
}

function booksAddUp(label: string, b: Awaited<ReturnType<typeof books>>, say: Say): boolean {
  const ok = b.other === 0 && b.pending === b.payments * paymentAmount && b.imbalance === 0;
  say(
    `${label}: ${b.payments} succeeded payments, ${b.other} other, pending balance ${b.pending}, sum of all entries ${b.imbalance}${ok ? '' : ' — DOES NOT ADD UP'}`,
  );
  return ok;
}

await runBenchmark('bench:payments', async (stops, say) => {
  const settings = settingsFromEnv();
  const tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-bench-temporal-'));
  stops.add('Temporal folder', async () => fs.rmSync(tmpDir, { recursive: true, force: true }));
  say('starting the Temporal dev server');
  const temporalServer = await startTemporalDevServer({
    dataDir: tmpDir,
    port: await freePort(),
    uiPort: await freePort(),
    namespace: 'default',
    log: say,
  });
  stops.add('Temporal dev server', () => temporalServer.stop());
  const connection = await Connection.connect({ address: temporalServer.address });
  stops.add('Temporal connection', () => connection.close());
  const temporal = new Client({ connection, namespace: 'default' });

  const env = await startEnvironment(stops, say, ({ orm, config, temporal: client }) => bareApp(orm, config, client), {
    temporal,
  });
  const { orm, engineBase, bareBase } = env;

  // One account per target for the payments (each payment takes its account's balance row lock), one shared for the balance.
  const enginePayer = await tenantWithKey(engineBase, 'Bench Engine Payments Inc');
  const barePayer = await tenantWithKey(engineBase, 'Bench Bare Payments Inc');
  const [enginePaid, barePaid] = await Promise.all(
    [
      { base: engineBase, tenant: enginePayer },
      { base: bareBase, tenant: barePayer },
    ].map(({ base, tenant }) =>
      call('POST', `${base}/v1/transactions`, JSON.parse(paymentBody(tenant.accountId)), tenant.headers),
    ),
  );
  for (const [target, answer] of [
    ['engine', enginePaid],
    ['bare', barePaid],
  ] as const) {
    if (answer!.status !== 201 || answer!.body?.status !== 'succeeded')
      throw new Error(`${target}: a payment did not succeed: ${JSON.stringify(answer)}`);
  }
  const [engineBalance, bareBalance] = await Promise.all(
    [engineBase, bareBase].map((base) => call('GET', `${base}/v1/balance`, undefined, enginePayer.headers)),
  );
  if (JSON.stringify(engineBalance!.body) !== JSON.stringify(bareBalance!.body) || engineBalance!.status !== 200) {
    throw new Error(
      `the two targets answer the balance differently:\n  engine ${JSON.stringify(engineBalance)}\n  bare   ${JSON.stringify(bareBalance)}`,
    );
  }
  say(`both targets take a payment alike and answer the same balance ${JSON.stringify(engineBalance!.body)}`);

  const balanceLabel = 'GET /v1/balance';
  const balance = await compare(
    balanceLabel,
    {
      engine: { url: `${engineBase}/v1/balance`, headers: enginePayer.headers },
      bare: { url: `${bareBase}/v1/balance`, headers: enginePayer.headers },
    },
    settings,
    say,
  );
  const paymentLabel = 'POST /v1/transactions (payment, pm_card_visa)';
  const post = (base: string, tenant: typeof enginePayer) => ({
    url: `${base}/v1/transactions`,
    method: 'POST' as const,
    headers: { ...tenant.headers, 'content-type': 'application/json' },
    body: paymentBody(tenant.accountId),
  });
  const payment = await compare(
    paymentLabel,
    { engine: post(engineBase, enginePayer), bare: post(bareBase, barePayer) },
    settings,
    say,
  );

  // autocannon stops with requests in flight; their handlers finish on their own: wait for them before counting.
  for (let i = 0; i < 150; i++) {
    const [row] = await orm.em
      .getConnection()
      .execute<
        { n: number }[]
      >(`select count(*)::int as n from transactions where account_id in (?, ?) and status = 'pending'`, [enginePayer.accountId, barePayer.accountId]);
    if (row!.n === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const booksOk = [
    booksAddUp('engine account', await books(orm, enginePayer.accountId), say),
    booksAddUp('bare account', await books(orm, barePayer.accountId), say),
  ].every(Boolean);
  const names = { engine: 'engine (createApp)', bare: 'bare Hono route' };
  const section = [
    sectionHeading,
    '',
    `Written by \`npm run bench:payments\` (bench/payments.ts) on ${new Date().toISOString()}.`,
    '',
    describeMachine(env, settings),
    '',
    '**What is compared.** Both targets authenticate with the same test API key and use the same connection pool and serializers. ' +
      'A succeeded card payment starts its availability workflow on a real Temporal dev server (no worker runs), for both targets through ' +
      "the same client. The bare payment route calls the engine's own service functions (risk-scored fields, pending row with its event, " +
      'the sandbox charge, the outcome with its ledger entries and events, the workflow start), so both run the same statements: the ' +
      'ratio is the cost of the HTTP layer around them. The bare balance route runs the credential query and one select of ' +
      '`account_balances`. Each payment target pays into its own account (one balance row lock per account, as for credits).',
    '',
    `### ${balanceLabel}`,
    '',
    ...comparisonLines(balance, names),
    '',
    `### ${paymentLabel}`,
    '',
    ...comparisonLines(payment, names),
    '',
    `Books after the run: ${booksOk ? 'every payment succeeded once, pending balance = payments × amount, ledger sums to zero, on both accounts' : 'DO NOT ADD UP (see the console)'}.`,
    '',
  ].join('\n');
  sayComparison(balanceLabel, balance, say);
  sayComparison(paymentLabel, payment, say);
  if (process.env.BENCH_WRITE === '0') process.stdout.write(`${section}\n`);
  else writeSection(resultsFile, sectionHeading, section);
  const ok = allSucceeded(balanceLabel, balance, say) && allSucceeded(paymentLabel, payment, say) && booksOk;
  return ok ? 0 : 1;
});
