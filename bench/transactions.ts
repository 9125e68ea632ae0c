/**
 * Benchmark: `POST /v1/transactions` (a credit) and `GET /v1/transactions?limit=20`
 * requests per second on the engine, each against a bare Hono route on the same
 * connection pool that runs the same SQL for that request, measured in the same run.
 *
 *   npm run bench:transactions        (or: node bench/transactions.ts)
 *
 * Starts an embedded PostgreSQL in a temporary folder, the engine's API and the
 * bare app (bench/harness.ts), seeds 1,000 transactions for the list, measures
 * the list, then the credits, writes its section of bench/RESULTS.md and stops
 * everything. Exits 1 if any request answered other than 2xx, or if the books of
 * either target do not add up afterwards.
 *
 * BENCH_DURATION and BENCH_WARMUP (seconds) and BENCH_ROUNDS shorten or lengthen a run.
 */
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';

import type { MikroORM } from '@mikro-orm/postgresql';
import type { Context } from 'hono';
import { Hono } from 'hono';

import type { AccountSettings, Transaction } from '../db/entities/index.ts';
import { newId } from '../domain/ids.ts';
import { scoreRisk } from '../domain/risk.ts';
import { serializeTransaction } from '../objects/transaction.ts';
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

const sectionHeading = '## Transactions: POST /v1/transactions (credit) and GET /v1/transactions?limit=20';
const seeded = 1_000;
const creditAmount = 100;

/** The statements the engine's credit runs in its database transaction (services/money/transactions.ts recordSucceededTransaction, services/money/ledger.ts, services/events/record.ts). */
const creditSql = {
  insertTransaction: `insert into transactions (id, account_id, livemode, amount, currency, type, status, reference, metadata, risk_level, risk_score,
      payment_method, failure_code, failure_message, created_at, updated_at, canceled_at)
    values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  insertBalanceTransaction: `insert into balance_transactions (id, account_id, livemode, type, source, amount, fee, net, currency, status, available_on, created_at)
    values (?, ?, ?, 'credit', ?, ?, 0, ?, ?, 'available', ?, ?)`,
  /** Money in: the balance row created or added to, and locked, in one statement (services/money/ledger.ts applyLegs). */
  moveBalance: `insert into account_balances (account_id, livemode, currency, available, pending, updated_at) values (?, ?, ?, ?, 0, now())
    on conflict (account_id, livemode, currency) do update
      set available = account_balances.available + excluded.available, pending = account_balances.pending + excluded.pending, updated_at = now()
    returning available, pending`,
  insertEntries: `insert into ledger_entries (account_id, livemode, transaction_id, balance_transaction_id, ledger_account, amount, currency, created_at)
    values (?, ?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?, ?) returning id`,
  /** transaction.created and transaction.succeeded, in one insert (the outbox: services/events/record.ts recordEvents). */
  insertEvents: `insert into events (id, account_id, livemode, type, transaction_id, data, created_at, dispatched_at)
    values (?, ?, ?, 'transaction.created', ?, ?, ?, null), (?, ?, ?, 'transaction.succeeded', ?, ?, ?, null)`,
};

/**
 * The engine's list statement for one sandbox page, newest first, limit + 1 to know has_more (api/pagination.ts
 * plainRows), with the condition that leaves out transactions of customers on test clocks (services/test-clocks/clocks.ts).
 */
const listSql = `select * from "transactions" where "account_id" = ? and "livemode" = ?
    and ((customer_id is null or customer_id not in (select c.id from customers as c where c.account_id = ? and c.livemode = false and c.test_clock_id is not null)))
    order by "id" desc limit ?`;

interface TransactionRow {
  id: string;
  account_id: string;
  livemode: boolean;
  amount: number;
  currency: string;
  type: Transaction['type'];
  status: Transaction['status'];
  reference: string | null;
  metadata: Record<string, string> | string;
  risk_level: Transaction['riskLevel'];
  risk_score: number;
  payment_method: string | null;
  failure_code: string | null;
  failure_message: string | null;
  created_at: Date | string;
  updated_at: Date | string;
  canceled_at: Date | string | null;
}

/** A raw row in the entity's shape, so the bare routes answer through the engine's own serializer. */
function fromRow(row: TransactionRow): Transaction {
  return {
    id: row.id,
    accountId: row.account_id,
    livemode: row.livemode,
    amount: row.amount,
    currency: row.currency,
    type: row.type,
    status: row.status,
    reference: row.reference,
    metadata: typeof row.metadata === 'string' ? JSON.parse(row.metadata) : row.metadata,
    riskLevel: row.risk_level,
    riskScore: row.risk_score,
    paymentMethod: row.payment_method,
    failureCode: row.failure_code,
    failureMessage: row.failure_message,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
    canceledAt: row.canceled_at === null ? null : new Date(row.canceled_at),
  } as Transaction;
}

/** The bare app: no middleware, no schema validation beyond what keeps the SQL meaningful. */
function bareApp(orm: MikroORM): Hono {
  const app = new Hono();
  const connection = () => orm.em.getConnection();
  const caller = (c: Context) => bareCaller(orm, c);
  const unauthorized = (c: Context) => c.json({ error: 'unauthorized', message: 'Invalid or revoked API key.' }, 401);

  app.post('/v1/transactions', async (c) => {
    const key = await caller(c);
    if (!key) return unauthorized(c);
    const body = await c.req.json<{ account_id: string; amount: number; currency: string; type: string }>();
    const settings: AccountSettings = typeof key.settings === 'string' ? JSON.parse(key.settings) : key.settings;
    if (
      body.account_id !== key.account_id ||
      body.type !== 'credit' ||
      !Number.isInteger(body.amount) ||
      body.amount <= 0 ||
      body.currency !== settings.currency
    ) {
      return c.json(
        { error: 'invalid_request', message: "This route only takes a credit on the caller's account." },
        400,
      );
    }
    // The engine counts the account's transactions of the past hour for the velocity part of the score; this route does not (see RESULTS.md).
    const risk = scoreRisk({
      amount: body.amount,
      currency: body.currency,
      type: 'credit',
      accountAgeMs: Date.now() - new Date(key.created_at).getTime(),
      transactionsLastHour: 0,
    });
    const now = new Date();
    const t: TransactionRow = {
      id: newId('transaction'),
      account_id: key.account_id,
      livemode: key.livemode,
      amount: body.amount,
      currency: body.currency,
      type: 'credit',
      status: 'succeeded',
      reference: null,
      metadata: '{}',
      risk_level: risk.level,
      risk_score: risk.score,
      payment_method: null,
      failure_code: null,
      failure_message: null,
      created_at: now,
      updated_at: now,
      canceled_at: null,
    };
    const sql = connection();
    await sql.transactional(async (trx) => {
      await sql.execute(
        creditSql.insertTransaction,
        [
          t.id,
          t.account_id,
          t.livemode,
          t.amount,
          t.currency,
          t.type,
          t.status,
          t.reference,
          t.metadata,
          t.risk_level,
          t.risk_score,
          t.payment_method,
          t.failure_code,
          t.failure_message,
          t.created_at,
          t.updated_at,
          t.canceled_at,
        ],
        'run',
        trx,
      );
      const btxnId = newId('balanceTransaction');
      await sql.execute(
        creditSql.insertBalanceTransaction,
        [btxnId, t.account_id, t.livemode, t.id, t.amount, t.amount, t.currency, now, now],
        'run',
        trx,
      );
      await sql.execute(creditSql.moveBalance, [t.account_id, t.livemode, t.currency, t.amount], 'all', trx);
      const entry = (ledgerAccount: string, amount: number) => [
        t.account_id,
        t.livemode,
        t.id,
        btxnId,
        ledgerAccount,
        amount,
        t.currency,
        new Date(),
      ];
      await sql.execute(
        creditSql.insertEntries,
        [...entry('available', t.amount), ...entry('external', -t.amount)],
        'all',
        trx,
      );
      const data = JSON.stringify({ object: serializeTransaction(fromRow(t)) });
      await sql.execute(
        creditSql.insertEvents,
        [
          newId('event'),
          t.account_id,
          t.livemode,
          t.id,
          data,
          now,
          newId('event'),
          t.account_id,
          t.livemode,
          t.id,
          data,
          now,
        ],
        'run',
        trx,
      );
    });
    return c.json(serializeTransaction(fromRow(t)), 201);
  });

  app.get('/v1/transactions', async (c) => {
    const key = await caller(c);
    if (!key) return unauthorized(c);
    const limit = Number(c.req.query('limit') ?? 20);
    const rows = await connection().execute<TransactionRow[]>(listSql, [
      key.account_id,
      key.livemode,
      key.account_id,
      limit + 1,
    ]);
    return c.json({
      object: 'list',
      data: rows.slice(0, limit).map((row) => serializeTransaction(fromRow(row))),
      has_more: rows.length > limit,
    });
  });
  return app;
}

/** A tenant with an API key (what a server-side client of the API uses). */
async function tenantWithKey(engineBase: string, name: string) {
  const tenant = await signUp(engineBase, name);
  // A test key: live credits are a platform admin's only (docs/security.md); sandbox credits take the same path.
  const key = await call(
    'POST',
    `${engineBase}/v1/api_keys`,
    { name: 'bench', mode: 'test' },
    { authorization: `Bearer ${tenant.accessToken}` },
  );
  if (key.status !== 201) throw new Error(`API key failed (${key.status}): ${JSON.stringify(key.body)}`);
  return { accountId: tenant.accountId, headers: { authorization: `Bearer ${String(key.body!.secret)}` } };
}

const creditBody = (accountId: string) =>
  JSON.stringify({ account_id: accountId, amount: creditAmount, currency: 'USD', type: 'credit' });

/** Transactions, cached balance, available entries and the sum of all entries of one account. */
async function books(orm: MikroORM, accountId: string) {
  const [row] = await orm.em
    .getConnection()
    .execute<{ transactions: number; cached: number; available: number; imbalance: number }[]>(
      `select (select count(*)::int from transactions where account_id = ?) as transactions,
            (select coalesce(sum(available), 0)::int from account_balances where account_id = ?) as cached,
            (select coalesce(sum(amount), 0)::int from ledger_entries where account_id = ? and ledger_account = 'available') as available,
            (select coalesce(sum(amount), 0)::int from ledger_entries where account_id = ?) as imbalance`,
      [accountId, accountId, accountId, accountId],
    );
  return row!;
}

/** True when every transaction of the account moved `creditAmount` on two balanced entries and the cached balance agrees. */
function booksAddUp(label: string, b: Awaited<ReturnType<typeof books>>, say: Say): boolean {
  const expected = b.transactions * creditAmount;
  const ok = b.cached === expected && b.available === expected && b.imbalance === 0;
  say(
    `${label}: ${b.transactions} transactions, balance ${b.cached}, available entries ${b.available}, sum of all entries ${b.imbalance}${ok ? '' : ' — DOES NOT ADD UP'}`,
  );
  return ok;
}

/** What differs between the two targets, and what the profiles showed (static: update it when the code changes). */
const explanation = [
  '**Both targets** authenticate with the same API key (`Authorization: Bearer sk_test_…`: a SHA-256 of the key looked up ' +
    "joined with its account; the engine's `authenticate` also selects the account's other columns), use the same MikroORM " +
    'connection pool (10 connections) and answer the same JSON through the same serializer (`serializeTransaction`); the ' +
    'benchmark checks before measuring that they list the same page and answer a credit alike. No `Idempotency-Key` is sent, ' +
    'as a client that does not retry would not: the idempotency middleware then returns at once, with no query (with a key, ' +
    'each POST adds an `insert … on conflict` before the route and an update storing the response after it). Beyond the SQL, ' +
    'the engine runs per request: request id, request logging (pino, silenced here, so log output costs nothing in these ' +
    'numbers), secure headers, body limit, the JSON-body check, `authenticate`, the idempotency pass-through, the ' +
    '`@hono/zod-openapi` routing and zod validation of the query or body.',
  '',
  `**The list** reads the first page (20 of the ${seeded.toLocaleString('en-US')} credits seeded through the engine on one account) with the same ` +
    'keyset select, `select * from "transactions" where "account_id" = ? and "livemode" = ? and (customer_id is null or customer_id ' +
    'not in (select … from customers … where test_clock_id is not null)) order by "id" desc limit 21` (the extra row tells has_more; ' +
    'the subquery leaves out transactions of customers on test clocks, as sandbox lists do). The engine builds that statement from ' +
    "the entity's metadata (api/pagination.ts, for the filters lists use) and maps the rows with MikroORM's own result mapper, " +
    'without making entities. History: the route first used `em.fork().find(Transaction, …)` (21 managed entities: about 1 ms of ' +
    'CPU a page), then the query builder with plain rows (0.4 ms; its SQL building alone was about 0.3 ms a request in a profile ' +
    'of the engine under load); until Nov 24 it read the ids of the clock customers with `em.find` before the page (a second ' +
    'statement, and 15% of its CPU in a profile: 1.25 ms a request, 0.54 ms without it), and a GET built a whole `Request` for ' +
    "Hono's body limit (3%). test/pagination.test.ts checks that the pages equal the query builder's.",
  '',
  '**The credits** go to one account per target (two new tenants), 100 each, 16 connections at once; every credit locks the ' +
    "account's balance row and holds it to the commit, so on one account credits run one after the other, for both targets " +
    'alike: throughput is bounded by how long each transaction holds the lock. Both targets run the same statements in one ' +
    'database transaction (BEGIN … COMMIT): the insert of the transaction row, the insert of its balance transaction, the ' +
    'balance movement in one statement (`insert … on conflict do update … returning`, which also takes the row lock), the two ' +
    'ledger entries in one insert, and the `transaction.created` and `transaction.succeeded` events in one insert (the outbox). ' +
    'The engine also counts the recent transactions of the account for the velocity part of the risk score (bounded: ' +
    '`select count(*) from (select 1 … limit 25)`; the bare route scores with 0), and runs the transaction and balance ' +
    'transaction inserts through the unit of work (`create` + `flush`, change sets computed at each flush), JavaScript that runs ' +
    'while the row lock is held. Until this session a movement took three statements (`insert … on conflict do nothing`, ' +
    '`select … for update`, `update`) and each event its own insert.',
  '',
  "In the engine's profiles the largest single item of the main thread, for both requests, was writing each statement to " +
    "PostgreSQL's socket (`pg` → `Socket.write`, 16 to 19% of the samples): on this machine every extra statement costs CPU, " +
    'not only a round trip.',
  '',
  '**Noise.** While this benchmark was written the 2-core machine was shared with other work (load averages of 3 to 11): ' +
    'requests/s of one target moved by up to 3 times between rounds, and over six runs of the code committed with it the ratio ' +
    "engine/bare ranged from 46 to 82% (list) and 40 to 76% (credit). Read one run's ratio with that in mind. CPU per request " +
    'moved too, but its ratio held: bare/engine 49 to 51% (list) and 38 to 42% (credit) in the two runs that measured it, so the ' +
    "engine spends about twice the bare route's CPU on a list request and about 2.5 times on a credit.",
];

await runBenchmark('bench:transactions', async (stops, say) => {
  const started = Date.now();
  const settings = settingsFromEnv();
  const env = await startEnvironment(stops, say, ({ orm }) => bareApp(orm));
  const { orm, engineBase, bareBase } = env;

  // The list: one tenant with `seeded` credits made through the engine, read by both targets.
  const lister = await tenantWithKey(engineBase, 'Bench List Inc');
  say(`seeding ${seeded} transactions through the engine...`);
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < seeded) {
        next++;
        const created = await call(
          'POST',
          `${engineBase}/v1/transactions`,
          JSON.parse(creditBody(lister.accountId)),
          lister.headers,
        );
        if (created.status !== 201)
          throw new Error(`seeding failed (${created.status}): ${JSON.stringify(created.body)}`);
      }
    }),
  );
  const [engineList, bareList] = await Promise.all(
    [engineBase, bareBase].map((base) => call('GET', `${base}/v1/transactions?limit=20`, undefined, lister.headers)),
  );
  if (
    engineList!.status !== 200 ||
    bareList!.status !== 200 ||
    !isDeepStrictEqual(engineList!.body, bareList!.body) ||
    (engineList!.body!.data as unknown[]).length !== 20
  ) {
    throw new Error(
      `the two targets list differently:\n  engine ${JSON.stringify(engineList)}\n  bare   ${JSON.stringify(bareList)}`,
    );
  }

  // The credits: one tenant per target, each crediting its own account, so each target queues on one balance row lock alike.
  const engineCredits = await tenantWithKey(engineBase, 'Bench Engine Credits Inc');
  const bareCredits = await tenantWithKey(engineBase, 'Bench Bare Credits Inc');
  const [engineCredit, bareCredit] = await Promise.all(
    [
      { base: engineBase, tenant: engineCredits },
      { base: bareBase, tenant: bareCredits },
    ].map(({ base, tenant }) =>
      call('POST', `${base}/v1/transactions`, JSON.parse(creditBody(tenant.accountId)), tenant.headers),
    ),
  );
  const comparable = (answer: typeof engineCredit) => ({
    ...answer!.body,
    id: typeof answer!.body?.id,
    account_id: null,
    created_at: null,
    updated_at: null,
  });
  if (
    engineCredit!.status !== 201 ||
    bareCredit!.status !== 201 ||
    !isDeepStrictEqual(comparable(engineCredit), comparable(bareCredit))
  ) {
    throw new Error(
      `the two targets credit differently:\n  engine ${JSON.stringify(engineCredit)}\n  bare   ${JSON.stringify(bareCredit)}`,
    );
  }
  say(
    `ready in ${((Date.now() - started) / 1000).toFixed(1)} s; both list the same page of ${seeded} and answer a credit alike`,
  );

  const listLabel = 'GET /v1/transactions?limit=20';
  const list = await compare(
    listLabel,
    {
      engine: { url: `${engineBase}/v1/transactions?limit=20`, headers: lister.headers },
      bare: { url: `${bareBase}/v1/transactions?limit=20`, headers: lister.headers },
    },
    settings,
    say,
  );
  const creditLabel = 'POST /v1/transactions (credit)';
  const post = (base: string, tenant: typeof engineCredits) => ({
    url: `${base}/v1/transactions`,
    method: 'POST' as const,
    headers: { ...tenant.headers, 'content-type': 'application/json' },
    body: creditBody(tenant.accountId),
  });
  const credit = await compare(
    creditLabel,
    { engine: post(engineBase, engineCredits), bare: post(bareBase, bareCredits) },
    settings,
    say,
  );

  const engineBooks = await books(orm, engineCredits.accountId);
  const bareBooks = await books(orm, bareCredits.accountId);
  const booksOk = [booksAddUp('engine account', engineBooks, say), booksAddUp('bare account', bareBooks, say)].every(
    Boolean,
  );

  const names = { engine: 'engine (createApp)', bare: 'bare Hono route' };
  const section = [
    sectionHeading,
    '',
    `Written by \`npm run bench:transactions\` (bench/transactions.ts) on ${new Date().toISOString()}.`,
    '',
    describeMachine(env, settings),
    '',
    `### ${listLabel}`,
    '',
    ...comparisonLines(list, names),
    '',
    `### ${creditLabel}`,
    '',
    ...comparisonLines(credit, names),
    '',
    `After the runs: the engine's account holds ${engineBooks.transactions} credits and the bare route's ${bareBooks.transactions}; ` +
      'for both, the cached balance equals the sum of the `available` ledger entries (100 per credit) and all entries sum to zero.',
    '',
    ...explanation,
  ].join('\n');
  writeSection(resultsFile, sectionHeading, section);

  say('');
  sayComparison(listLabel, list, say);
  sayComparison(creditLabel, credit, say);
  say(`written to ${path.relative(process.cwd(), resultsFile) || resultsFile}`);
  const listOk = allSucceeded(listLabel, list, say);
  const creditOk = allSucceeded(creditLabel, credit, say);
  return listOk && creditOk && booksOk ? 0 : 1;
});
