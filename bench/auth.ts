/**
 * Benchmark: authenticated `GET /v1/account` requests per second on the engine,
 * against a bare Hono route that does the same session check and account read
 * with one SQL query, both measured in the same run on this machine.
 *
 *   npm run bench:auth        (or: node bench/auth.ts)
 *
 * Starts everything it needs (an embedded PostgreSQL in a temporary folder, the
 * engine's API, the bare app), runs autocannon on a worker thread of its own
 * (autocannon's `workers` option), writes its section of bench/RESULTS.md, and
 * stops everything again. Exits 1 if any request answered other than 2xx.
 * The shared pieces are in bench/harness.ts.
 *
 * BENCH_DURATION and BENCH_WARMUP (seconds) and BENCH_ROUNDS shorten or lengthen a run.
 */
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';

import { Hono } from 'hono';

import type { CallerAccountRow } from '../api/auth/principal.ts';
import { secretKey, verifyAccessToken } from '../api/auth/tokens.ts';
import { serializeAccountRow } from '../objects/account.ts';
import {
  allSucceeded,
  compare,
  comparisonLines,
  describeMachine,
  resultsFile,
  runBenchmark,
  sayComparison,
  settingsFromEnv,
  signUp,
  startEnvironment,
  writeSection,
} from './harness.ts';

const goal = 0.7;
const sectionHeading = '## Authenticated GET /v1/account';

/** What the bare route reads: the session, its user and the user's account, in one query. */
const bareQuery = `
  select a.id, a.email, a.name, a.type, a.status, a.settings, a.created_at, a.updated_at, a.closed_at
    from sessions s
    join users u on u.id = s.user_id
    join accounts a on a.id = u.account_id
   where s.id = ? and s.user_id = ? and s.revoked_at is null and s.expires_at > now()
     and u.status = 'active' and a.status <> 'closed'`;

await runBenchmark('bench:auth', async (stops, say) => {
  const started = Date.now();
  const settings = settingsFromEnv();

  // Baseline: a bare Hono route, no middleware, the same JWT check and the same
  // database connection pool, one SQL query.
  const env = await startEnvironment(stops, say, ({ orm, config }) => {
    const key = secretKey(config.auth.secret);
    const bareApp = new Hono();
    bareApp.get('/v1/account', async (c) => {
      const match = /^Bearer\s+(\S+)$/i.exec(c.req.header('authorization') ?? '');
      const claims = match ? await verifyAccessToken(key, match[1]!) : null;
      if (!claims) return c.json({ error: 'unauthorized', message: 'Invalid or expired access token.' }, 401);
      const [row] = await orm.em
        .getConnection()
        .execute<CallerAccountRow[]>(bareQuery, [claims.sessionId, claims.userId]);
      if (!row) return c.json({ error: 'unauthorized', message: 'This session is no longer valid.' }, 401);
      return c.json(serializeAccountRow(row));
    });
    return bareApp;
  });

  // A tenant: public sign-up, then the owner's login.
  const tenant = await signUp(env.engineBase, 'Bench Inc');
  const headers = { authorization: `Bearer ${tenant.accessToken}` };

  // Both targets must answer the same thing, or we would compare different work.
  const [engineAnswer, bareAnswer] = await Promise.all(
    [env.engineBase, env.bareBase].map(async (base) => {
      const response = await fetch(`${base}/v1/account`, { headers });
      return { status: response.status, body: await response.json() };
    }),
  );
  if (
    engineAnswer!.status !== 200 ||
    bareAnswer!.status !== 200 ||
    !isDeepStrictEqual(engineAnswer!.body, bareAnswer!.body)
  ) {
    throw new Error(
      `the two targets answer differently:\n  engine ${JSON.stringify(engineAnswer)}\n  bare   ${JSON.stringify(bareAnswer)}`,
    );
  }
  say(
    `ready in ${((Date.now() - started) / 1000).toFixed(1)} s; both answer 200 with the same account (${tenant.accountId})`,
  );

  const comparison = await compare(
    'GET /v1/account',
    { engine: { url: `${env.engineBase}/v1/account`, headers }, bare: { url: `${env.bareBase}/v1/account`, headers } },
    settings,
    say,
  );

  const section = [
    sectionHeading,
    '',
    `Written by \`npm run bench:auth\` (bench/auth.ts) on ${new Date().toISOString()}.`,
    '',
    describeMachine(env, settings),
    '',
    ...comparisonLines(comparison, { engine: 'engine (createApp)', bare: 'bare Hono route' }, goal),
    '',
    'Both targets verify the same HS256 access token with the same secret (`verifyAccessToken`), use the same MikroORM ' +
      'connection pool and answer the same JSON. The bare route has no middleware and makes one SQL query that checks the ' +
      'session and returns the account. The engine, per request, also: makes a request id and sets `X-Request-Id` ' +
      '(`hono/request-id`); runs the request-logging middleware (pino, here with the logger created as ' +
      "`createLogger('silent')`, so the line is built and timed but not written: production logging at `info` costs more " +
      'than measured here); sets the secure headers (`hono/secure-headers`); runs the body-limit and JSON-body checks ' +
      '(both pass through at once for a GET with no body); routes through the `@hono/zod-openapi` sub-apps; resolves the ' +
      'principal in `authenticate` (api/auth/principal.ts), whose one SQL query checks the session, the user and the ' +
      "account's status and also selects the account's columns, and the tenant in `accountScope` (no query for an owner); " +
      'the route then answers from that row (`serializeAccountRow`), so for an owner the engine makes one database round ' +
      'trip per request, as the baseline does. Until commit 614ea04 it made a second one, `orm.em.fork().findOne(Account)`, ' +
      'and measured 48 to 50% of the bare route on this machine; admins (x-account-id) still take that path.',
    '',
  ].join('\n');
  writeSection(resultsFile, sectionHeading, section);

  say('');
  sayComparison('GET /v1/account', comparison, say, goal);
  say(`written to ${path.relative(process.cwd(), resultsFile) || resultsFile}`);
  return allSucceeded('GET /v1/account', comparison, say) ? 0 : 1;
});
