import { randomBytes } from 'node:crypto';

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { userStatuses } from '../db/entities/index.ts';
import { errorStatus } from '../domain/errors.ts';
import { passwordPolicyProblem } from '../domain/passwords.ts';
import { startTestEngine, type TestEngine, testPassword } from './helpers/engine.ts';

/**
 * Property-based fuzzing of the identity endpoints: malformed bodies, wrong
 * content types, junk query strings and junk path ids, as owner, member, admin,
 * with a bad token and with no credentials. Whatever comes in: never a 5xx,
 * every refusal in the one error shape `{ error, message }` with the status its
 * code maps to, and a refused request changes nothing in the database.
 */

type Role = 'owner' | 'member' | 'admin' | 'admin_scoped' | 'bad_token' | 'anonymous';
type LoggedIn = 'owner' | 'member' | 'admin';
const everyone: Role[] = ['owner', 'member', 'admin', 'admin_scoped', 'bad_token', 'anonymous'];

/** A request body as it goes on the wire. */
type Body =
  | { kind: 'json'; value: unknown; contentType: string | null; withLength: boolean }
  | { kind: 'text'; text: string; contentType: string | null; withLength: boolean }
  | { kind: 'bytes'; bytes: Uint8Array; contentType: string | null; withLength: boolean };

interface Req {
  role: Role;
  method: string;
  /** Path and query; `$OWN`, `$MEMBER`, `$ADMIN` stand for user ids resolved at send time. */
  path: string;
  body?: Body;
  headers?: Record<string, string>;
  /** A call that would change state if it succeeded (closing the account, deleting the owner): it must be refused. */
  mustRefuse?: boolean;
}

// ---------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------

const hugeString = fc.string({ minLength: 1000, maxLength: 2048, size: 'max' });
/** Lengths at the edges of the columns (varchar(255)) and of the schemas (200, 254, 256), and strings that grow when lower-cased. */
const edgeLengths = fc.constantFrom(
  'f'.repeat(200),
  'f'.repeat(201),
  'f'.repeat(254),
  'f'.repeat(255),
  'f'.repeat(256),
  'İ'.repeat(128),
  'İ'.repeat(254),
  ` ${'x'.repeat(253)} `,
);
const unicodeString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  // Control characters (NUL among them) inside otherwise ordinary text.
  fc
    .tuple(
      fc.string({ maxLength: 10 }),
      fc.constantFrom('\u0000', '\u0001', '\u001f', '\u007f'),
      fc.string({ maxLength: 10 }),
    )
    .map((parts) => parts.join('')),
  fc.constantFrom(
    '\u0000',
    'a\u0000b',
    '💥',
    'e\u0301',
    '\uD800',
    '\uDFFF',
    '\u202Eevil',
    '\uFEFF',
    'İ'.repeat(254),
    'ß'.repeat(200),
    ' ',
    '\t\n\r',
    '\\',
    '"',
    "'; drop table users; --",
    '%',
    '_',
  ),
);
/** Anything but the right thing. */
const junk: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(''),
  fc.string({ maxLength: 30 }),
  unicodeString,
  hugeString,
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -1, 1e308, -0, Number.MAX_SAFE_INTEGER + 2, 2 ** 31),
  edgeLengths,
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
);
/** A field: sometimes a plausible value (so validation passes and deeper code runs), mostly junk. */
const field = (...plausible: fc.Arbitrary<unknown>[]) =>
  fc.oneof({ weight: 3, arbitrary: junk }, ...plausible.map((arbitrary) => ({ weight: 2, arbitrary })));

const freshEmail = fc.integer({ min: 0, max: 1_000_000 }).map((n) => `fuzz${n}@example.com`);
const emailish = fc.oneof(
  freshEmail,
  fc.constantFrom(
    'not-an-email',
    'a@b',
    '@example.com',
    'a@',
    ' A@EXAMPLE.COM ',
    'a@@example.com',
    'a\u0000@example.com',
    `${'a'.repeat(250)}@example.com`,
    'ümlaut@exämple.com',
  ),
  edgeLengths,
);
/** Passwords that fail the policy (so no generated request ever changes a password we rely on). */
const weakPassword = fc
  .oneof(fc.string({ maxLength: 12 }), unicodeString, hugeString)
  .filter((p) => passwordPolicyProblem(p) !== null);
const strongPassword = fc.constantFrom(testPassword, 'Fuzz!pass9', `${'Aa1!'.repeat(64)}x`, 'Ünï¢ødé!1A');
const name = fc.oneof(
  fc.string({ minLength: 1, maxLength: 40 }),
  unicodeString,
  edgeLengths,
  fc.string({ minLength: 190, maxLength: 260, size: 'max' }),
);
const someId = (prefix: string) =>
  fc.oneof(
    fc.stringMatching(/^[a-z0-9]{0,30}$/).map((s) => `${prefix}_${s}`),
    fc.string({ maxLength: 70 }),
    unicodeString,
  );
const settings = fc.oneof(
  junk,
  fc.record(
    {
      currency: field(fc.constantFrom('USD', 'eur', 'XYZ', 'US', '')),
      timezone: field(fc.constantFrom('UTC', 'Europe/Paris', 'Mars/Olympus', 'utc', '+01:00')),
      language: field(fc.constantFrom('en', 'pt-BR', 'not a tag!', 'x-klingon', '')),
      colour: fc.constant('red'),
    },
    { requiredKeys: [] },
  ),
);
const sessionIdRef = fc.constantFrom('$SESSION_owner', '$SESSION_member', '$SESSION_admin');

/** Objects with each endpoint's real field names and wrong (or occasionally right) values. */
const fields = {
  login: fc.oneof(
    fc.record(
      {
        email: field(emailish),
        password: field(weakPassword, strongPassword),
        device_fingerprint: field(fc.string({ maxLength: 300, size: 'max' })),
      },
      { requiredKeys: [] },
    ),
    // The member's real credentials (never a wrong password for a real email: that would throttle it)
    // with a junk device fingerprint: either refused by validation or a real login.
    fc.record({
      email: fc.constantFrom('$MEMBER_EMAIL', ' $MEMBER_EMAIL_UPPER '),
      password: fc.constant(testPassword),
      device_fingerprint: fc.oneof(junk, edgeLengths, fc.string({ minLength: 200, maxLength: 300, size: 'max' })),
    }),
  ),
  refresh: fc.record({ refresh_token: field(fc.stringMatching(/^rt_[A-Za-z0-9_-]{0,60}$/)) }, { requiredKeys: [] }),
  endSession: fc.record({ session_id: field(sessionIdRef, someId('ses')) }, { requiredKeys: [] }),
  createUser: fc.record(
    {
      email: field(emailish),
      password: field(weakPassword, strongPassword),
      name: field(name),
      role: field(fc.constantFrom('owner', 'member', 'admin', 'OWNER', '')),
      account_id: field(fc.constant('$ACCOUNT_ID'), someId('acct')),
    },
    { requiredKeys: [] },
  ),
  patchUser: fc.record(
    {
      name: field(name),
      status: field(fc.constantFrom('ACTIVE', 'deleted', 'closed', 'active ', '')),
      password: field(weakPassword),
      role: field(fc.constantFrom('admin', 'owner')),
    },
    { requiredKeys: [] },
  ),
  createAccount: fc.record(
    {
      email: field(emailish),
      name: field(name),
      type: field(fc.constantFrom('business', 'individual', 'corporation', 'BUSINESS')),
      password: field(weakPassword, strongPassword),
      settings: field(settings),
    },
    { requiredKeys: [] },
  ),
  patchAccount: fc.record(
    { name: field(name), email: field(emailish), settings: field(settings), status: field(fc.constantFrom('closed')) },
    { requiredKeys: [] },
  ),
  createKey: fc.record(
    { name: field(name), mode: field(fc.constantFrom('test', 'live', 'LIVE', '')) },
    { requiredKeys: [] },
  ),
  none: fc.constant({}),
};

const contentType = fc.oneof(
  { weight: 10, arbitrary: fc.constant('application/json') },
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'APPLICATION/JSON',
      'application/vnd.api+json',
      'application/merge-patch+json',
      'application/json;',
      'application/json; charset',
      'application/jsonx',
      'text/json',
      'text/plain',
      'text/x+json',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/xml',
      '*/*',
      '',
      'application/json, text/plain',
    ),
  },
  { weight: 1, arbitrary: fc.constant(null) },
);
const notJson = fc.oneof(
  fc.string({ minLength: 1, maxLength: 60 }).filter((s) => {
    try {
      JSON.parse(s);
      return false;
    } catch {
      return true;
    }
  }),
  fc.constantFrom(
    '{"email": "a@example.com",',
    '{a:1}',
    "{'email':'a@example.com'}",
    'NaN',
    'undefined',
    '[1,2,',
    '{"a":1}}',
    '\u0000',
    'email=a%40example.com&password=x',
    '<xml/>',
    '{'.repeat(2000),
    '['.repeat(5000) + ']'.repeat(5000),
    '{"amount": 1e999}',
    '{"__proto__": {"role": "admin"}}',
    '{"constructor": {"prototype": {"role": "admin"}}}',
    '{"email":"a@example.com","email":"b@example.com"}',
    '  ',
    '\uFEFF{}',
  ),
);

/** A body for an endpoint: its fields with wrong values, any JSON at all, not JSON, wrong content types, raw bytes, or none. */
function bodyFor(structured: fc.Arbitrary<unknown>): fc.Arbitrary<Body | undefined> {
  const withLength = fc.oneof(
    { weight: 3, arbitrary: fc.constant(true) },
    { weight: 1, arbitrary: fc.constant(false) },
  );
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({ value: structured, withLength }).map(({ value, withLength }) => ({
        kind: 'json' as const,
        value,
        contentType: 'application/json',
        withLength,
      })),
    },
    {
      weight: 3,
      arbitrary: fc.record({ value: fc.jsonValue(), withLength }).map(({ value, withLength }) => ({
        kind: 'json' as const,
        value,
        contentType: 'application/json',
        withLength,
      })),
    },
    {
      weight: 2,
      arbitrary: fc
        .record({ text: notJson, withLength })
        .map(({ text, withLength }) => ({ kind: 'text' as const, text, contentType: 'application/json', withLength })),
    },
    {
      weight: 2,
      arbitrary: fc
        .record({ value: fc.oneof(structured, fc.jsonValue()), contentType, withLength })
        .map(({ value, contentType, withLength }) => ({ kind: 'json' as const, value, contentType, withLength })),
    },
    {
      weight: 1,
      arbitrary: fc
        .record({ bytes: fc.uint8Array({ maxLength: 64 }), contentType, withLength })
        .map((b) => ({ kind: 'bytes' as const, ...b })),
    },
    {
      weight: 1,
      arbitrary: fc.constant({
        kind: 'text' as const,
        text: JSON.stringify({ name: 'x'.repeat(110 * 1024) }),
        contentType: 'application/json',
        withLength: true,
      }),
    },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}

/** A path segment for /v1/users/{id} and /v1/api_keys/{id}: random, junk, percent-encoded, too long. */
const junkIdSegment = fc.oneof(
  fc.stringMatching(/^[a-z0-9]{0,30}$/).map((s) => `usr_${s}`),
  fc.stringMatching(/^[a-z0-9]{0,30}$/).map((s) => `key_${s}`),
  fc.string({ unit: 'grapheme', maxLength: 30 }).map(encodeURIComponent),
  fc.string({ minLength: 65, maxLength: 120, size: 'max' }).map(encodeURIComponent),
  fc.constantFrom('%00', 'usr_%00', 'key_%00', '%01'),
  fc.constantFrom(
    '%ZZ',
    '%',
    '%E0%A4%A',
    '%C3%28',
    '%2F',
    '%2e%2e',
    'null',
    'undefined',
    '0',
    '-1',
    '%20',
    'usr_1%3Bdrop',
    '%F0%9F%92%A5',
  ),
);

/** Query strings with the real parameter names, junk values, repeated keys and raw percent-encoding. */
const queryValue = fc.oneof(
  fc
    .oneof(
      fc.constantFrom(
        '-1',
        '0',
        '1',
        '2',
        '100',
        '101',
        '1e3',
        '1.5',
        '99999999999999999999',
        '1000001',
        'NaN',
        'Infinity',
        '0x10',
        ' 1',
        '',
        'abc',
        'true',
        'null',
      ),
      fc.constantFrom('active', 'suspended', 'closed', 'pending', 'individual', 'business', 'ACTIVE'),
      fc.constantFrom(
        '2024-01-01T00:00:00Z',
        '2024-02-30T00:00:00Z',
        '2024-01-01',
        '2024-01-01T00:00:00',
        '2024-01-01T00:00:00.123456789+05:30',
      ),
      // The ends of the four-digit years the ISO format allows, shifted by extreme offsets.
      fc.constantFrom(
        '0000-01-01T00:00:00Z',
        '0000-01-01T00:00:00+23:59',
        '0001-01-01T00:00:00+23:59',
        '9999-12-31T23:59:59-23:59',
        '9999-12-31T23:59:59Z',
      ),
      fc
        .date({ min: new Date('0000-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true })
        .map((d) => d.toISOString()),
      fc.constantFrom('$ACCOUNT_ID', 'acct_missing'),
      fc.integer().map(String),
      fc.double().map(String),
      fc.string({ maxLength: 20 }),
      fc.string({ unit: 'grapheme', maxLength: 20 }),
      fc.string({ minLength: 190, maxLength: 260, size: 'max' }),
      edgeLengths,
    )
    .map(encodeURIComponent),
  fc.constantFrom('%00', 'a%00b', '%01'),
  fc.constantFrom('%ZZ', '%', '%E0%A4%A', '%C3%28', '%25', 'a%26b%3Dc', '%2B1', '+1', 'a+b', '%5C', '%27%3B--'),
);
const queryKey = fc.oneof(
  {
    weight: 9,
    arbitrary: fc.constantFrom(
      'page',
      'limit',
      'status',
      'search',
      'type',
      'created_after',
      'created_before',
      'account_id',
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom('foo', 'page[]', 'PAGE', '', 'limit%20', '%00') },
);
const queryString = fc
  .array(fc.tuple(queryKey, queryValue, fc.boolean()), { maxLength: 6 })
  .map((pairs) =>
    pairs.length ? `?${pairs.map(([k, v, withValue]) => (withValue || v !== '' ? `${k}=${v}` : k)).join('&')}` : '',
  );

const badTokens = fc.constantFrom(
  'Bearer',
  'Bearer ',
  'Basic dXNlcjpwYXNz',
  'Bearer sk_test_nothing',
  'Bearer sk_live_',
  'Bearer rt_nothing',
  'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1c3JfeCIsInNpZCI6InNlc194IiwidHlwIjoiYWNjZXNzIn0.',
  'bearer a b',
  'Token abc',
);

/** IDENTITY_FUZZ_SCALE=10 runs ten times as many cases (and prints the seed to replay with IDENTITY_FUZZ_SEED). */
const runs = (n: number) => Math.round(n * Number(process.env.IDENTITY_FUZZ_SCALE ?? 1));
const fuzzOptions = (n: number) => ({
  numRuns: runs(n),
  ...(process.env.IDENTITY_FUZZ_SEED ? { seed: Number(process.env.IDENTITY_FUZZ_SEED) } : {}),
});

const role = (...roles: Role[]) => fc.constantFrom(...roles);

/** The identity endpoints with bodies (every method that may carry one). */
const bodyRequests: fc.Arbitrary<Req> = fc
  .oneof(
    fc
      .record({ role: role(...everyone), body: bodyFor(fields.login) })
      .map((r) => ({ ...r, method: 'POST', path: '/v1/auth/login' })),
    fc
      .record({ role: role(...everyone), body: bodyFor(fields.refresh) })
      .map((r) => ({ ...r, method: 'POST', path: '/v1/auth/refresh' })),
    // The refresh token where the endpoint wants it: in Authorization and in the body (random, so never a stored one).
    fc
      .record({
        token: fc.stringMatching(/^rt_[A-Za-z0-9_-]{1,60}$/),
        same: fc.boolean(),
        other: fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/),
      })
      .map(({ token, same, other }) => ({
        role: 'anonymous' as const,
        method: 'POST',
        path: '/v1/auth/refresh',
        headers: { authorization: `Bearer ${token}` },
        body: {
          kind: 'json' as const,
          value: { refresh_token: same ? token : other },
          contentType: 'application/json',
          withLength: true,
        },
      })),
    fc
      .record({ role: role(...everyone), body: bodyFor(fields.endSession) })
      .map((r) => ({ ...r, method: 'DELETE', path: '/v1/auth/session' })),
    fc
      .record({ role: role(...everyone), body: bodyFor(fields.createUser), query: queryString })
      .map(({ query, ...r }) => ({ ...r, method: 'POST', path: `/v1/users${query}` })),
    fc
      .record({
        role: role(...everyone),
        id: fc.oneof(fc.constantFrom('$OWN', '$MEMBER', '$ADMIN'), junkIdSegment),
        body: bodyFor(fields.patchUser),
      })
      .map(({ id, ...r }) => ({ ...r, method: 'PATCH', path: `/v1/users/${id}` })),
    // DELETE /v1/users/{id}: never the member (an owner or admin would really delete it) and never the
    // owner as an admin (that succeeds); the owner by anyone else and the admin by anyone must be refused.
    fc
      .record({
        role: role(...everyone),
        id: fc.oneof(fc.constant('$ADMIN'), junkIdSegment),
        body: bodyFor(fields.none),
      })
      .map(({ id, ...r }) => ({ ...r, method: 'DELETE', path: `/v1/users/${id}`, mustRefuse: id === '$ADMIN' })),
    fc
      .record({ role: role('owner', 'member', 'bad_token', 'anonymous'), body: bodyFor(fields.none) })
      .map((r) => ({ ...r, method: 'DELETE', path: '/v1/users/$OWN', mustRefuse: true })),
    fc
      .record({ role: role(...everyone), body: bodyFor(fields.createAccount) })
      .map((r) => ({ ...r, method: 'POST', path: '/v1/accounts' })),
    fc
      .record({ role: role(...everyone), body: bodyFor(fields.patchAccount) })
      .map((r) => ({ ...r, method: 'PATCH', path: '/v1/account' })),
    // Closing the account: only callers that must be refused (a member, an admin naming no account, a bad token, nobody).
    fc
      .record({ role: role('member', 'admin', 'bad_token', 'anonymous'), body: bodyFor(fields.none) })
      .map((r) => ({ ...r, method: 'DELETE', path: '/v1/account', mustRefuse: true })),
    fc
      .record({ role: role(...everyone), body: bodyFor(fields.createKey) })
      .map((r) => ({ ...r, method: 'POST', path: '/v1/api_keys' })),
    fc
      .record({ role: role(...everyone), id: junkIdSegment, body: bodyFor(fields.none) })
      .map(({ id, ...r }) => ({ ...r, method: 'DELETE', path: `/v1/api_keys/${id}` })),
  )
  .filter((req) => {
    // No generated request may change a password or a status we rely on (see fields.patchUser); belt and braces.
    if (req.method !== 'PATCH' || !req.path.startsWith('/v1/users/') || req.body?.kind !== 'json') return true;
    const value = req.body.value as Record<string, unknown> | null;
    if (!value || typeof value !== 'object') return true;
    const status = value.status;
    const password = value.password;
    return (
      !(typeof status === 'string' && (userStatuses as readonly string[]).includes(status)) &&
      !(typeof password === 'string' && passwordPolicyProblem(password) === null)
    );
  });

/** The identity endpoints that read, with junk query strings and path ids. */
const queryRequests: fc.Arbitrary<Req> = fc
  .record({
    role: role(...everyone),
    path: fc.oneof(
      fc.constantFrom(
        '/v1/users',
        '/v1/accounts',
        '/v1/account',
        '/v1/api_keys',
        '/v1/users/$OWN',
        '/v1/users/$MEMBER',
        '/v1/users/$ADMIN',
      ),
      junkIdSegment.map((id) => `/v1/users/${id}`),
    ),
    query: queryString,
  })
  .map(({ role, path, query }) => ({ role, method: 'GET', path: `${path}${query}` }));

// ---------------------------------------------------------------------------
// The test
// ---------------------------------------------------------------------------

describe('identity endpoints under malformed input', () => {
  let engine: TestEngine;
  const ids = { account: '', own: '', member: '', admin: '', memberEmail: '' };
  const credentials = {} as Record<LoggedIn, { email: string; password: string }>;
  const sessions = {} as Record<LoggedIn, { token: string; sessionId: string }>;
  let badToken = 'Bearer';
  const stats = { requests: 0, success: 0, refused: new Map<number, number>() };

  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
    ids.account = engine.tenant.accountId;
    credentials.owner = { email: engine.tenant.email, password: engine.tenant.password };
    sessions.owner = { token: engine.tenant.accessToken, sessionId: engine.tenant.sessionId };

    ids.memberEmail = `member-${randomBytes(3).toString('hex')}@example.com`;
    const member = await engine.call('POST', '/v1/users', {
      email: ids.memberEmail,
      password: testPassword,
      name: 'Member',
      role: 'member',
    });
    expect(member.status).toBe(201);
    ids.member = member.body.id;
    credentials.member = { email: ids.memberEmail, password: testPassword };
    credentials.admin = { email: engine.config.auth.adminEmail, password: engine.config.auth.adminPassword };
    for (const who of ['member', 'admin'] as const) {
      const session = await engine.login(credentials[who].email, credentials[who].password);
      sessions[who] = { token: session.accessToken, sessionId: session.sessionId };
    }

    const users = await engine.call('GET', '/v1/users');
    expect(users.status).toBe(200);
    ids.own = users.body.data.find((u: { email: string }) => u.email === engine.tenant.email).id;
    const [admin] = await sql<{ id: string }>(`select id from users where role = 'admin'`);
    ids.admin = admin!.id;
  }, 120_000);

  afterAll(async () => {
    if (stats.requests) {
      const refused = [...stats.refused.entries()]
        .sort(([a], [b]) => a - b)
        .map(([s, n]) => `${s}×${n}`)
        .join(' ');
      console.log(`identity fuzz: ${stats.requests} requests, ${stats.success} accepted, refused: ${refused}`);
    }
    await engine?.close();
  });

  function sql<T>(query: string, params: unknown[] = []): Promise<T[]> {
    return engine.db.orm.em.fork().getConnection().execute<T[]>(query, params);
  }

  /** Row counts and a fingerprint of every mutable column of the identity tables (login_attempts excepted). */
  async function snapshot() {
    const fingerprint = (table: string) =>
      `(select md5(coalesce(string_agg(row_to_json(t)::text, ',' order by id), '')) from ${table} t)`;
    const [row] = await sql<Record<string, unknown>>(`
      select (select count(*)::int from accounts) as accounts,
             (select count(*)::int from users) as users,
             (select count(*)::int from sessions) as sessions,
             (select count(*)::int from refresh_tokens) as refresh_tokens,
             (select count(*)::int from api_keys) as api_keys,
             ${fingerprint('accounts')} as accounts_fp,
             ${fingerprint('users')} as users_fp,
             ${fingerprint('api_keys')} as api_keys_fp,
             (select md5(coalesce(string_agg(id || '=' || coalesce(revoked_at::text, '-') || coalesce(revoked_reason, ''), ',' order by id), '')) from sessions) as sessions_fp,
             (select md5(coalesce(string_agg(id || '=' || coalesce(used_at::text, '-'), ',' order by id), '')) from refresh_tokens) as refresh_tokens_fp`);
    return row;
  }

  function resolve(value: unknown): unknown {
    if (typeof value === 'string') {
      return value
        .replaceAll('$MEMBER_EMAIL_UPPER', ids.memberEmail.toUpperCase())
        .replaceAll('$MEMBER_EMAIL', ids.memberEmail)
        .replaceAll('$ACCOUNT_ID', ids.account)
        .replaceAll('$SESSION_owner', sessions.owner.sessionId)
        .replaceAll('$SESSION_member', sessions.member.sessionId)
        .replaceAll('$SESSION_admin', sessions.admin.sessionId);
    }
    if (Array.isArray(value)) return value.map(resolve);
    if (value && typeof value === 'object')
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v)]));
    return value;
  }

  function headersFor(role: Role): Record<string, string> {
    switch (role) {
      case 'anonymous':
        return {};
      case 'bad_token':
        return { authorization: badToken };
      case 'admin_scoped':
        return { authorization: `Bearer ${sessions.admin.token}`, 'x-account-id': ids.account };
      default:
        return { authorization: `Bearer ${sessions[role].token}` };
    }
  }

  async function send(req: Req) {
    const path = req.path
      .replaceAll('$OWN', ids.own)
      .replaceAll('$MEMBER', ids.member)
      .replaceAll('$ADMIN', ids.admin)
      .replaceAll('%24ACCOUNT_ID', ids.account);
    const headers: Record<string, string> = { ...headersFor(req.role), ...req.headers };
    const init: RequestInit = { method: req.method, headers };
    if (req.body) {
      const { body } = req;
      // Bytes, so that fetch adds no content type of its own; a real server would always see a length.
      const bytes =
        body.kind === 'bytes'
          ? body.bytes
          : Buffer.from(body.kind === 'json' ? (JSON.stringify(resolve(body.value)) ?? '') : body.text, 'utf8');
      init.body = bytes;
      if (body.contentType !== null) headers['content-type'] = body.contentType;
      if (body.withLength) headers['content-length'] = String(bytes.byteLength);
    }
    const response = await engine.app.request(path, init);
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      /* not JSON: fails the shape check below */
    }
    return { path, status: response.status, body: parsed as any, text };
  }

  function describeReq(req: Req, path: string) {
    const body = !req.body
      ? 'no body'
      : `${req.body.contentType ?? '(no content-type)'}${req.body.withLength ? '' : ' (no content-length)'} ${
          req.body.kind === 'json'
            ? JSON.stringify(req.body.value)
            : req.body.kind === 'text'
              ? JSON.stringify(req.body.text)
              : `bytes[${req.body.bytes.length}]`
        }`;
    return `${req.role} ${req.method} ${path} ${req.headers ? JSON.stringify(req.headers) + ' ' : ''}${body}`.slice(
      0,
      1500,
    );
  }

  /** After an accepted request: log back in whoever's session it ended. */
  async function afterSuccess() {
    const revoked = await sql<{ id: string }>(
      `select id from sessions where id in (?, ?, ?) and revoked_at is not null`,
      [sessions.owner.sessionId, sessions.member.sessionId, sessions.admin.sessionId],
    );
    for (const who of ['owner', 'member', 'admin'] as const) {
      if (!revoked.some((r) => r.id === sessions[who].sessionId)) continue;
      const session = await engine.login(credentials[who].email, credentials[who].password);
      sessions[who] = { token: session.accessToken, sessionId: session.sessionId };
    }
  }

  /** The three properties every request must have. */
  async function check(req: Req) {
    const before = await snapshot();
    const response = await send(req);
    const accepted = response.status >= 200 && response.status < 300;
    const after = accepted ? undefined : await snapshot();
    const wrote = after && JSON.stringify(after) !== JSON.stringify(before) ? ' (and it wrote to the database)' : '';
    const label = `${describeReq(req, response.path)}\n  → ${response.status}${wrote} ${response.text.slice(0, 500)}`;
    stats.requests++;
    expect(response.status, label).toBeLessThan(500);
    if (accepted) {
      stats.success++;
      expect(req.mustRefuse ?? false, `must have been refused: ${label}`).toBe(false);
      await afterSuccess();
      return;
    }
    stats.refused.set(response.status, (stats.refused.get(response.status) ?? 0) + 1);
    expect(response.body !== null && typeof response.body === 'object' && !Array.isArray(response.body), label).toBe(
      true,
    );
    expect(Object.keys(response.body).sort(), label).toEqual(['error', 'message']);
    expect(typeof response.body.error, label).toBe('string');
    expect(typeof response.body.message, label).toBe('string');
    expect(
      errorStatus[response.body.error as keyof typeof errorStatus],
      `status of code "${response.body.error}": ${label}`,
    ).toBe(response.status);
    expect(after, `a refused request wrote: ${label}`).toEqual(before);
  }

  it(
    'bodies: malformed JSON, wrong types and values, wrong content types, as every caller',
    { timeout: 120_000 * Math.max(1, Number(process.env.IDENTITY_FUZZ_SCALE ?? 1)) },
    async () => {
      await fc.assert(
        fc.asyncProperty(bodyRequests, badTokens, async (req, token) => {
          badToken = token;
          await check(req);
        }),
        fuzzOptions(100),
      );
    },
  );

  it(
    'query strings and path ids: junk values, repeated keys, percent-encoding, as every caller',
    { timeout: 120_000 * Math.max(1, Number(process.env.IDENTITY_FUZZ_SCALE ?? 1)) },
    async () => {
      await fc.assert(
        fc.asyncProperty(queryRequests, badTokens, async (req, token) => {
          badToken = token;
          await check(req);
        }),
        fuzzOptions(50),
      );
    },
  );

  it(
    'the destructive calls stay refused for whoever may not make them',
    { timeout: 120_000 * Math.max(1, Number(process.env.IDENTITY_FUZZ_SCALE ?? 1)) },
    async () => {
      // Closing the account and deleting the owner, by every caller that may not, whatever the body.
      const refused = fc.oneof(
        fc
          .record({ role: role('member', 'admin', 'bad_token', 'anonymous'), body: bodyFor(fields.none) })
          .map((r) => ({ ...r, method: 'DELETE', path: '/v1/account', mustRefuse: true })),
        fc
          .record({ role: role('owner', 'member', 'bad_token', 'anonymous'), body: bodyFor(fields.none) })
          .map((r) => ({ ...r, method: 'DELETE', path: '/v1/users/$OWN', mustRefuse: true })),
      );
      await fc.assert(
        fc.asyncProperty(refused, badTokens, async (req, token) => {
          badToken = token;
          await check(req);
        }),
        fuzzOptions(20),
      );
      // And the tenant is whole afterwards.
      const account = await engine.call('GET', '/v1/account', undefined, {
        authorization: `Bearer ${sessions.owner.token}`,
      });
      expect(account.status).toBe(200);
      expect(account.body.status).toBe('active');
      const own = await engine.call('GET', `/v1/users/${ids.own}`, undefined, {
        authorization: `Bearer ${sessions.owner.token}`,
      });
      expect(own.status).toBe(200);
    },
  );
});
