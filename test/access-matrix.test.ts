import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { cliKeyScope, cliScopeRowOf } from '../api/auth/cli-scope.ts';
import { startTestEngine, type TestEngine, testPassword } from './helpers/engine.ts';

/**
 * Who may do what: every cell of the access table in docs/identity-and-access.md, each run against a
 * fresh account so that destructive cells (closing the account, deleting a user)
 * cannot disturb the others.
 */
type Actor = 'admin' | 'owner' | 'member' | 'api_key' | 'none';
const actors: Actor[] = ['admin', 'owner', 'member', 'api_key', 'none'];

interface World {
  accountId: string;
  headers: Record<Actor, Record<string, string>>;
  memberId: string;
  otherMemberId: string;
  keyId: string;
  customerId: string;
  productId: string;
  planId: string;
}

type Request = [method: string, path: string, body?: unknown];
/** `request` may first create, as the owner, what the actor then acts on. */
type Action = { name: string; request: (w: World) => Request | Promise<Request>; expected: Record<Actor, number> };

const unique = () => Math.random().toString(36).slice(2, 10);
export const accessTable: Action[] = [
  {
    name: 'POST /v1/accounts',
    request: () => [
      'POST',
      '/v1/accounts',
      { email: `new-${unique()}@example.com`, name: 'N', type: 'business', password: testPassword },
    ],
    expected: { admin: 201, owner: 401, member: 401, api_key: 401, none: 201 },
  },
  {
    name: 'GET /v1/accounts',
    request: () => ['GET', '/v1/accounts'],
    expected: { admin: 200, owner: 403, member: 403, api_key: 403, none: 401 },
  },
  {
    name: 'GET /v1/account',
    request: () => ['GET', '/v1/account'],
    expected: { admin: 200, owner: 200, member: 200, api_key: 200, none: 401 },
  },
  {
    name: 'PATCH /v1/account',
    request: () => ['PATCH', '/v1/account', { name: 'Renamed' }],
    expected: { admin: 200, owner: 200, member: 401, api_key: 401, none: 401 },
  },
  {
    name: 'DELETE /v1/account',
    request: () => ['DELETE', '/v1/account'],
    expected: { admin: 200, owner: 200, member: 403, api_key: 403, none: 401 },
  },
  {
    name: 'GET /v1/users',
    request: () => ['GET', '/v1/users'],
    expected: { admin: 200, owner: 200, member: 403, api_key: 403, none: 401 },
  },
  {
    name: 'POST /v1/users',
    request: (w) => [
      'POST',
      '/v1/users',
      { email: `u-${unique()}@example.com`, password: testPassword, account_id: w.accountId },
    ],
    expected: { admin: 201, owner: 201, member: 401, api_key: 401, none: 401 },
  },
  {
    name: 'GET /v1/users/{another member}',
    request: (w) => ['GET', `/v1/users/${w.otherMemberId}`],
    expected: { admin: 200, owner: 200, member: 404, api_key: 401, none: 401 },
  },
  {
    name: 'GET /v1/users/{the member}',
    request: (w) => ['GET', `/v1/users/${w.memberId}`],
    expected: { admin: 200, owner: 200, member: 200, api_key: 401, none: 401 },
  },
  {
    name: 'PATCH /v1/users/{the member} name',
    request: (w) => ['PATCH', `/v1/users/${w.memberId}`, { name: 'New Name' }],
    expected: { admin: 200, owner: 200, member: 200, api_key: 401, none: 401 },
  },
  {
    name: 'PATCH /v1/users/{the member} status',
    request: (w) => ['PATCH', `/v1/users/${w.memberId}`, { status: 'pending' }],
    expected: { admin: 200, owner: 200, member: 401, api_key: 401, none: 401 },
  },
  {
    name: 'PATCH /v1/users/{another member}',
    request: (w) => ['PATCH', `/v1/users/${w.otherMemberId}`, { name: 'X' }],
    expected: { admin: 200, owner: 200, member: 404, api_key: 401, none: 401 },
  },
  {
    name: 'DELETE /v1/users/{another member}',
    request: (w) => ['DELETE', `/v1/users/${w.otherMemberId}`],
    expected: { admin: 200, owner: 200, member: 403, api_key: 403, none: 401 },
  },
  {
    name: 'POST /v1/api_keys',
    request: () => ['POST', '/v1/api_keys', { name: 'k' }],
    expected: { admin: 201, owner: 201, member: 403, api_key: 403, none: 401 },
  },
  {
    name: 'GET /v1/api_keys',
    request: () => ['GET', '/v1/api_keys'],
    expected: { admin: 200, owner: 200, member: 403, api_key: 403, none: 401 },
  },
  {
    name: 'DELETE /v1/api_keys/{id}',
    request: (w) => ['DELETE', `/v1/api_keys/${w.keyId}`],
    expected: { admin: 200, owner: 200, member: 403, api_key: 403, none: 401 },
  },
  {
    name: 'POST /v1/customers',
    request: () => ['POST', '/v1/customers', { email: 'c@example.com' }],
    expected: { admin: 201, owner: 201, member: 201, api_key: 201, none: 401 },
  },
  {
    name: 'GET /v1/customers/{id}',
    request: (w) => ['GET', `/v1/customers/${w.customerId}`],
    expected: { admin: 200, owner: 200, member: 200, api_key: 200, none: 401 },
  },
  {
    name: 'GET /v1/customers',
    request: () => ['GET', '/v1/customers'],
    expected: { admin: 200, owner: 200, member: 200, api_key: 200, none: 401 },
  },
  {
    name: 'PATCH /v1/customers/{id}',
    request: (w) => ['PATCH', `/v1/customers/${w.customerId}`, { payment_method: 'pm_card_visa' }],
    expected: { admin: 200, owner: 200, member: 200, api_key: 200, none: 401 },
  },
  {
    name: 'POST /v1/products',
    request: () => ['POST', '/v1/products', { name: 'P' }],
    expected: { admin: 201, owner: 201, member: 201, api_key: 201, none: 401 },
  },
  {
    name: 'GET /v1/products',
    request: () => ['GET', '/v1/products'],
    expected: { admin: 200, owner: 200, member: 200, api_key: 200, none: 401 },
  },
  {
    name: 'GET /v1/products/{id}',
    request: (w) => ['GET', `/v1/products/${w.productId}`],
    expected: { admin: 200, owner: 200, member: 200, api_key: 200, none: 401 },
  },
  {
    name: 'PATCH /v1/products/{id}',
    request: (w) => ['PATCH', `/v1/products/${w.productId}`, { active: false }],
    expected: { admin: 200, owner: 200, member: 200, api_key: 200, none: 401 },
  },
  {
    name: 'POST /v1/plans',
    request: (w) => [
      'POST',
      '/v1/plans',
      { name: 'P', product: w.productId, amount: 100, currency: 'USD', interval: 'month' },
    ],
    expected: { admin: 201, owner: 201, member: 201, api_key: 201, none: 401 },
  },
  {
    name: 'GET /v1/plans',
    request: () => ['GET', '/v1/plans'],
    expected: { admin: 200, owner: 200, member: 200, api_key: 200, none: 401 },
  },
  {
    name: 'PATCH /v1/plans/{id}',
    request: (w) => ['PATCH', `/v1/plans/${w.planId}`, { name: 'Renamed' }],
    expected: { admin: 200, owner: 200, member: 200, api_key: 200, none: 401 },
  },
  {
    name: 'DELETE /v1/plans/{id} (archive)',
    request: (w) => ['DELETE', `/v1/plans/${w.planId}`],
    expected: { admin: 200, owner: 200, member: 200, api_key: 200, none: 401 },
  },
  {
    name: 'DELETE /v1/auth/session',
    request: () => ['DELETE', '/v1/auth/session'],
    expected: { admin: 200, owner: 200, member: 200, api_key: 400, none: 401 },
  },
  // Where and when live money goes (issue #24): members may not; a live CLI key may not either (the CLI key scope below).
  {
    name: 'POST /v1/bank_accounts',
    request: () => ['POST', '/v1/bank_accounts', bankAccountBody()],
    expected: { admin: 201, owner: 201, member: 403, api_key: 201, none: 401 },
  },
  {
    name: 'DELETE /v1/bank_accounts/{id}',
    request: async (w) => ['DELETE', `/v1/bank_accounts/${await ownersBankAccount(w)}`],
    expected: { admin: 200, owner: 200, member: 403, api_key: 200, none: 401 },
  },
  {
    name: 'PATCH /v1/payout_settings',
    request: () => ['PATCH', '/v1/payout_settings', { currency: 'USD', interval: 'daily' }],
    expected: { admin: 200, owner: 200, member: 403, api_key: 200, none: 401 },
  },
  {
    name: 'DELETE /v1/payout_holds/{id}',
    request: async (w) => ['DELETE', `/v1/payout_holds/${await ownersHold(w)}`],
    expected: { admin: 200, owner: 200, member: 403, api_key: 200, none: 401 },
  },
];

let matrixEngine: TestEngine | undefined;
const bankAccountBody = () => ({
  type: 'us_ach',
  account_holder_name: 'Acme Studio LLC',
  account_holder_type: 'company',
  country: 'US',
  currency: 'USD',
  routing_number: '110000000',
  account_number: `0001${Math.floor(Math.random() * 1e8)}`,
  default_for_currency: true,
});
async function ownersBankAccount(w: World): Promise<string> {
  const created = await matrixEngine!.call('POST', '/v1/bank_accounts', bankAccountBody(), w.headers.owner);
  if (created.status !== 201) throw new Error(`bank account: ${JSON.stringify(created.body)}`);
  return created.body.id;
}
async function ownersHold(w: World): Promise<string> {
  const created = await matrixEngine!.call(
    'POST',
    '/v1/payout_holds',
    { reason: 'Reviewing a disputed charge' },
    w.headers.owner,
  );
  if (created.status !== 201) throw new Error(`payout hold: ${JSON.stringify(created.body)}`);
  return created.body.id;
}

describe('access table', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
    matrixEngine = engine;
  });
  afterAll(() => engine?.close());

  async function world(): Promise<World> {
    const owner = await engine.signUp();
    const addMember = async () => {
      const email = `m-${unique()}@example.com`;
      const created = await engine.call('POST', '/v1/users', { email, password: testPassword }, owner.headers);
      return { id: created.body.id as string, email };
    };
    const [member, other, key, customer, admin, product] = await Promise.all([
      addMember(),
      addMember(),
      engine.call('POST', '/v1/api_keys', { mode: 'live' }, owner.headers),
      engine.call('POST', '/v1/customers', { email: 'seen@example.com' }, owner.headers),
      engine.admin(),
      engine.call('POST', '/v1/products', { name: 'Seen' }, owner.headers),
    ]);
    const plan = await engine.call(
      'POST',
      '/v1/plans',
      { name: 'Seen', amount: 100, currency: 'USD', interval: 'month' },
      owner.headers,
    );
    const memberSession = await engine.login(member.email, testPassword);
    return {
      accountId: owner.accountId,
      memberId: member.id,
      otherMemberId: other.id,
      keyId: key.body.id,
      customerId: customer.body.id,
      productId: product.body.id,
      planId: plan.body.id,
      headers: {
        admin: { ...admin.headers, 'x-account-id': owner.accountId },
        owner: owner.headers,
        member: memberSession.headers,
        api_key: { authorization: `Bearer ${key.body.secret}` },
        none: { authorization: '' },
      },
    };
  }

  for (const action of accessTable) {
    it(action.name, async () => {
      const results: Record<string, number> = {};
      // A fresh world per actor (a cell may close the account or delete a user), made at once: most of a
      // world's cost is password hashing, which runs on libuv's threads, not the event loop.
      const worlds = await Promise.all(actors.map(() => world()));
      for (const [i, actor] of actors.entries()) {
        const w = worlds[i]!;
        const [method, path, body] = await action.request(w);
        const response = await engine.call(method, path, body, w.headers[actor]);
        results[actor] = response.status;
        if (response.status >= 400)
          expect(Object.keys(response.body).sort(), `${actor} error shape`).toEqual(['error', 'message']);
      }
      expect(results).toEqual(action.expected);
    });
  }
});

/**
 * Every route of the OpenAPI document, one row each: the CLI key scope of
 * api/auth/cli-scope.ts must have exactly the document's operations (a new route without a
 * row fails here), and each row is tried with a live and a test CLI key, and without any
 * credential (401 unless the document marks the route public).
 */
describe('every route of the OpenAPI document', () => {
  let engine: TestEngine;
  let operations: Map<string, { public: boolean }>;
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: false });
    const doc = (await engine.call('GET', '/openapi.json')).body as {
      paths: Record<string, Record<string, { security?: Record<string, string[]>[] }>>;
    };
    operations = new Map();
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
        // Public: no credential at all (security: []). The portal's routes take a portal token instead of a key.
        operations.set(`${method.toUpperCase()} ${path}`, {
          public: Array.isArray(operation.security) && operation.security.length === 0,
        });
      }
    }
  });
  afterAll(() => engine?.close());

  it('the CLI key scope has one row per operation, and only those', () => {
    const rows = Object.keys(cliKeyScope);
    expect(
      rows.filter((row) => !operations.has(row)),
      'rows of no route',
    ).toEqual([]);
    expect(
      [...operations.keys()].filter((operation) => !Object.hasOwn(cliKeyScope, operation)),
      'routes without a row in api/auth/cli-scope.ts',
    ).toEqual([]);
    expect(operations.size).toBe(rows.length);
  });

  /** A request answered without reading a streamed body (the event and log streams never end). */
  async function request(
    method: string,
    path: string,
    headers: Record<string, string>,
  ): Promise<{ status: number; message?: string }> {
    const init: RequestInit = { method, headers: { ...headers } };
    if (method === 'POST' || method === 'PATCH') {
      init.body = '{}';
      (init.headers as Record<string, string>)['content-type'] = 'application/json';
    }
    const response = await engine.app.request(path, init);
    if (!(response.headers.get('content-type') ?? '').includes('application/json')) {
      await response.body?.cancel();
      return { status: response.status };
    }
    const body = (await response.json()) as { message?: string };
    return { status: response.status, message: body.message };
  }

  const scopeRefusal = /^CLI keys cannot be used for /;
  const concrete = (path: string) => path.replace(/\{\w+\}/g, 'x_00000000000000000000000000');
  for (const [row, rule] of Object.entries(cliKeyScope)) {
    it(`${row}: CLI keys ${rule.scope === 'allowed' ? 'allowed' : rule.scope === 'test_only' ? 'test mode only' : 'refused'}`, async () => {
      const [method, template] = row.split(' ') as [string, string];
      const path = concrete(template);
      expect(cliScopeRowOf(method, path)?.row, 'the row a request falls under').toBe(row);
      const mint = async (mode: 'live' | 'test') => {
        const minted = await engine.call('POST', '/v1/cli_keys', { name: `matrix ${mode}`, mode });
        expect(minted.status).toBe(201);
        return minted.body.secret as string;
      };
      const [live, test] = await Promise.all([mint('live'), mint('test')]);
      expect(live).toMatch(/^ck_live_/);
      expect(test).toMatch(/^ck_test_/);
      const asLive = await request(method, path, { 'x-cli-key': live });
      const asTest = await request(method, path, { 'x-cli-key': test });
      const refused = (answer: { status: number; message?: string }) =>
        answer.status === 403 && scopeRefusal.test(answer.message ?? '');
      expect({ live: refused(asLive), test: refused(asTest) }, JSON.stringify({ asLive, asTest })).toEqual({
        live: rule.scope !== 'allowed',
        test: rule.scope === 'denied',
      });
      // Without any credential: refused wherever the document asks for one (401; 400 when the empty body or query is refused first).
      const anonymous = await request(method, path, {});
      if (operations.get(row)?.public) expect(anonymous.status, 'a public route').not.toBe(401);
      else expect([400, 401], JSON.stringify(anonymous)).toContain(anonymous.status);
    });
  }
});
