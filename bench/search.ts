/**
 * Benchmark: `GET /v1/transactions/search` latency (p50/p99) on an account holding
 * BENCH_SEARCH_ROWS (default 200,000) transactions, through the real API over HTTP.
 *
 *   node bench/search.ts
 *
 * Starts an embedded PostgreSQL in a temporary folder and the engine's API
 * (bench/harness.ts), signs an account up, loads its transactions with one SQL
 * statement (2,000 customers, four statuses, three types, amounts 1..100,000,
 * references `order-<n>`, a metadata key, a year of creation times) plus 20,000 of
 * another account that no search must return, runs ANALYZE (as autovacuum would),
 * then for each query sends BENCH_SEARCH_REQUESTS (default 200) requests one after
 * another after 20 warm-up ones and records each one's time. Writes its section of
 * bench/RESULTS.md. Exits 1 if a request answered other than 200 or a result leaks
 * another account's row.
 */
import { performance } from 'node:perf_hooks';

import type { Hono } from 'hono';

import {
  call,
  describeMachine,
  resultsFile,
  round1,
  runBenchmark,
  type Say,
  signUp,
  startEnvironment,
  writeSection,
} from './harness.ts';

const sectionHeading = '## Search: GET /v1/transactions/search on 200,000 transactions';
const rows = Number(process.env.BENCH_SEARCH_ROWS ?? 200_000);
const requests = Number(process.env.BENCH_SEARCH_REQUESTS ?? 200);
const warmup = 20;

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

await runBenchmark('search', async (stops, say: Say) => {
  const env = await startEnvironment(stops, say, () => ({ fetch: () => new Response('unused') }) as unknown as Hono);
  const tenant = await signUp(env.engineBase, 'Search Bench');
  const other = await signUp(env.engineBase, 'Someone Else');
  const sql = env.orm.em.getConnection();
  say(`loading ${rows} transactions`);
  const loadStarted = performance.now();
  await sql.execute(
    `insert into customers (id, email, name, payment_method, account_id, livemode, created_at, updated_at)
     select 'cus_' || lpad(g::text, 26, '0'), 'buyer' || g || '@example.com', 'Buyer ' || g, 'pm_card_visa', ?, true, now(), now()
     from generate_series(1, 2000) g`,
    [tenant.accountId],
  );
  const insertRows = (accountId: string, count: number, offset: number) =>
    sql.execute(
      `insert into transactions (id, account_id, livemode, amount, currency, type, status, reference, metadata, risk_level, risk_score, customer_id, created_at, updated_at, amount_refunded)
       select 'txn_' || lpad((g + ?)::text, 26, '0'), ?, true, (g * 7919 % 100000) + 1,
              case when g % 10 = 0 then 'EUR' else 'USD' end,
              (array['payment','payment','credit','refund'])[g % 4 + 1],
              (array['succeeded','succeeded','succeeded','failed','pending','canceled'])[g % 6 + 1],
              'order-' || g, jsonb_build_object('order', g::text, 'channel', (array['web','pos','api'])[g % 3 + 1]),
              (array['low','low','normal','elevated','high'])[g % 5 + 1], 0,
              case when ? then 'cus_' || lpad((g % 2000 + 1)::text, 26, '0') else null end,
              now() - (g * 157 || ' seconds')::interval, now(), 0
       from generate_series(1, ?) g`,
      [offset, accountId, accountId === tenant.accountId, count],
    );
  await insertRows(tenant.accountId, rows, 0);
  await insertRows(other.accountId, 20_000, rows);
  await sql.execute('analyze');
  say(`loaded in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s`);

  const auth = { authorization: `Bearer ${tenant.accessToken}` };
  const target = rows - 1000;
  // A day about a third of the way back through the rows' creation times.
  const day = new Date(Date.now() - Math.floor((rows * 157) / 3) * 1000).toISOString().slice(0, 10);
  const nextDay = new Date(Date.parse(day) + 86_400_000).toISOString().slice(0, 10);
  const queries: { label: string; query: string }[] = [
    { label: 'one status (most rows match)', query: 'status:succeeded' },
    { label: 'status AND amount range', query: 'status:succeeded AND amount>=50000 AND amount<50500' },
    { label: 'exact reference', query: `reference:"order-${target}"` },
    { label: 'reference substring (trigram)', query: `reference~"der-${target}"` },
    { label: 'customer email substring (join)', query: 'email~"buyer1999@"' },
    { label: 'one customer', query: `customer:cus_${String(1234).padStart(26, '0')}` },
    { label: 'metadata key', query: `metadata["order"]:"${target}"` },
    { label: 'created in a day', query: `created>=${day} AND created<${nextDay}` },
    { label: 'OR of three', query: 'risk_level:high OR status:pending OR type:refund' },
    { label: 'negation', query: '-status:succeeded AND currency:EUR' },
    { label: 'rare match (scans)', query: 'amount:99999 AND type:credit' },
  ];
  let failed = false;
  const results: { label: string; query: string; p50: number; p99: number; max: number; first: number }[] = [];
  for (const { label, query } of queries) {
    const url = `${env.engineBase}/v1/transactions/search?query=${encodeURIComponent(query)}&limit=20`;
    const times: number[] = [];
    let first = 0;
    for (let i = 0; i < warmup + requests; i++) {
      const started = performance.now();
      const response = await call('GET', url, undefined, auth);
      const elapsed = performance.now() - started;
      if (response.status !== 200) {
        say(`FAILED: ${query}: ${response.status} ${JSON.stringify(response.body)}`);
        failed = true;
        break;
      }
      const data = (response.body!.data as { id: string }[]) ?? [];
      if (i === 0) {
        first = data.length;
        // Every row is the tenant's: the other account's ids start past `rows`.
        if (data.some((t) => Number(t.id.slice(4)) > rows)) {
          say(`FAILED: ${query} returned another account's transaction`);
          failed = true;
        }
      }
      if (i >= warmup) times.push(elapsed);
    }
    if (!times.length) continue;
    times.sort((a, b) => a - b);
    const result = {
      label,
      query,
      p50: percentile(times, 50),
      p99: percentile(times, 99),
      max: times[times.length - 1]!,
      first,
    };
    results.push(result);
    say(`${label}: p50 ${round1(result.p50)} ms, p99 ${round1(result.p99)} ms (${first} rows on the first page)`);
  }

  const section = [
    sectionHeading,
    '',
    `Written by \`node bench/search.ts\` on ${new Date().toISOString().slice(0, 10)}. One account with ${rows.toLocaleString('en')} transactions ` +
      `(2,000 customers, a year of creation times) and another with 20,000; each query is sent ${requests} times one after another ` +
      `(after ${warmup} warm-up requests) with \`limit=20\`, through the engine's HTTP API (authentication included), and each ` +
      'request is timed from the client. No other load.',
    '',
    describeMachine(env, { connections: 1, warmupSeconds: 0, rounds: 1, durationSeconds: 0 } as never).split(
      ' Load: ',
    )[0]!,
    '',
    '| query | p50 ms | p99 ms | max ms | rows on page 1 |',
    '|---|---:|---:|---:|---:|',
    ...results.map(
      (r) =>
        `| ${r.label}: \`${r.query.replace(/\|/g, '\\|')}\` | ${round1(r.p50)} | ${round1(r.p99)} | ${round1(r.max)} | ${r.first} |`,
    ),
    '',
  ].join('\n');
  if (process.env.BENCH_WRITE === '0') process.stdout.write(`${section}\n`);
  else writeSection(resultsFile, sectionHeading, section);
  return failed ? 1 : 0;
});
