import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createApp } from '../api/app.ts';
import { Customer, Subscription } from '../db/entities/index.ts';
import { openOrm } from '../db/orm.ts';
import { freePort } from '../dev/processes.ts';
import { type ErrorCode, errorStatus } from '../domain/errors.ts';
import { createLogger } from '../logger.ts';
import { seedCustomerAndPlan, startTestEngine, type TestEngine } from './helpers/engine.ts';

/** The cross-cutting behaviour of the HTTP edge: every refusal in the one error shape, nothing written. */
describe('HTTP edge', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  const customers = () => engine.db.orm.em.fork().count(Customer);
  const expectError = (response: { status: number; body: any }, status: number, code: string) => {
    expect(response.status).toBe(status);
    expect(Object.keys(response.body).sort()).toEqual(['error', 'message']);
    expect(response.body.error).toBe(code);
    expect(response.body.message).toEqual(expect.any(String));
  };

  it('malformed JSON is invalid_request (400) and writes nothing', async () => {
    const before = await customers();
    expectError(await engine.call('POST', '/v1/customers', '{"email": "a@example.com",'), 400, 'invalid_request');
    expect(await customers()).toBe(before);
  });

  it('a body that is not JSON is unsupported_media_type (415)', async () => {
    expectError(
      await engine.call('POST', '/v1/customers', 'email=a@example.com', { 'content-type': 'text/plain' }),
      415,
      'unsupported_media_type',
    );
  });

  it('NUL characters and absurdly nested JSON are invalid_request, found by the fuzz test', async () => {
    const before = await customers();
    expectError(
      await engine.call('POST', '/v1/customers', { email: 'a@example.com', name: 'a\u0000b' }),
      400,
      'invalid_request',
    );
    expectError(await engine.call('GET', '/v1/customers/cus_%00'), 400, 'invalid_request');
    expectError(
      await engine.call('POST', '/v1/customers', '['.repeat(20_000) + ']'.repeat(20_000)),
      400,
      'invalid_request',
    );
    expect(await customers()).toBe(before);
  });

  it('an unknown route is not_found (404); a method a known path does not take is method_not_allowed (405, with Allow)', async () => {
    expectError(await engine.call('GET', '/v1/nothing-here'), 404, 'not_found');
    const wrongMethod = await engine.call('DELETE', '/v1/customers');
    expectError(wrongMethod, 405, 'method_not_allowed');
    expect(wrongMethod.headers.get('allow')).toBe('GET, HEAD, POST');
  });

  it('an oversized body is payload_too_large (413)', async () => {
    const big = JSON.stringify({ email: 'a@example.com', name: 'x'.repeat(engine.config.bodyLimitBytes) });
    expectError(await engine.call('POST', '/v1/customers', big), 413, 'payload_too_large');
  });

  it('fields that fail validation are invalid_request naming the field', async () => {
    const response = await engine.call('POST', '/v1/plans', {
      name: 'P',
      amount: -5,
      currency: 'XYZ',
      interval: 'fortnight',
    });
    expectError(response, 400, 'invalid_request');
    expect(response.body.message).toMatch(/amount/);
    expectError(
      await engine.call('POST', '/v1/plans', { name: 'P', amount: 10.5, currency: 'USD', interval: 'month' }),
      400,
      'invalid_request',
    );
    expectError(await engine.call('POST', '/v1/customers', { email: 'not-an-email' }), 400, 'invalid_request');
    expectError(
      await engine.call('POST', '/v1/customers', { email: 'a@example.com', surprise: true }),
      400,
      'invalid_request',
    );
  });

  it('a subscription for an unknown customer or plan is not_found and starts nothing', async () => {
    const { customerId, planId } = await seedCustomerAndPlan(engine);
    expectError(
      await engine.call('POST', '/v1/subscriptions', { customer_id: 'cus_missing', plan: planId }),
      404,
      'not_found',
    );
    expectError(
      await engine.call('POST', '/v1/subscriptions', { customer_id: customerId, plan: 'plan_missing' }),
      404,
      'not_found',
    );
    expectError(await engine.call('GET', '/v1/subscriptions/sub_missing'), 404, 'not_found');
    expect(await engine.db.orm.em.fork().count(Subscription, { customerId })).toBe(0);
  });

  it('every response carries a request id', async () => {
    const response = await engine.call('GET', '/v1/nothing-here');
    expect(response.headers.get('x-request-id')).toMatch(/\S+/);
  });

  it('serves the OpenAPI document and interactive docs', async () => {
    const doc = await engine.call('GET', '/openapi.json');
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toBe('3.1.0');
    expect(Object.keys(doc.body.paths)).toEqual(
      expect.arrayContaining(['/v1/subscriptions', '/v1/subscriptions/{id}', '/v1/customers', '/v1/plans', '/health']),
    );
    expect(doc.body.components.schemas).toHaveProperty('Subscription');
    expect(doc.body.components.schemas).toHaveProperty('Error');
    const docs = await engine.app.request('/docs');
    expect(docs.status).toBe(200);
    expect(await docs.text()).toContain('/openapi.json');
    const asset = await engine.app.request('/docs/assets/swagger-ui-bundle.js');
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toContain('javascript');
  });

  it('the OpenAPI document lists the statuses every operation can answer, each error with an example of its status', async () => {
    const doc = (await engine.call('GET', '/openapi.json')).body;
    const operations = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
        .map(([method, operation]) => ({ path, method, operation })),
    );
    expect(operations.length).toBeGreaterThan(70);
    for (const { path, method, operation } of operations) {
      const where = `${method.toUpperCase()} ${path}`;
      const statuses = Object.keys(operation.responses);
      expect(statuses, where).toEqual(expect.arrayContaining(['400', '429', '500']));
      // Every /v1 operation checks a credential sent, a public one too; Node's header limit can answer any request.
      if (path.startsWith('/v1/')) expect(statuses, where).toEqual(expect.arrayContaining(['401']));
      expect(statuses, where).toContain('431');
      if (path.includes('{')) expect(statuses, where).toEqual(expect.arrayContaining(['404']));
      if (method === 'post' || method === 'patch')
        expect(statuses, where).toEqual(expect.arrayContaining(['413', '415']));
      if (
        method === 'post' &&
        operation.parameters?.some((p: any) => p.$ref === '#/components/parameters/IdempotencyKey')
      ) {
        expect(statuses, where).toEqual(expect.arrayContaining(['409', '422']));
      }
      for (const [status, response] of Object.entries<any>(operation.responses)) {
        // 431 comes from Node's HTTP parser with an empty body, before any route.
        if (Number(status) < 400 || status === '431') continue;
        const example = response.content?.['application/json']?.example;
        // /health's 503 is its report (which dependency is down), not an error body.
        if (path === '/health' && status === '503') {
          expect(example, `${where} ${status}`).toMatchObject({ status: 'degraded', database: { ok: false } });
          continue;
        }
        expect(example, `${where} ${status}`).toMatchObject({ error: expect.any(String), message: expect.any(String) });
        // A dependency outage says when to retry.
        if (status === '503')
          expect(response.headers?.['Retry-After'], `${where} 503`).toMatchObject({ schema: { type: 'integer' } });
        expect(errorStatus[example.error as ErrorCode], `${where} ${status}: ${example.error}`).toBe(Number(status));
      }
    }
    // Route-specific statuses stay: a refused role, a state conflict.
    expect(Object.keys(doc.paths['/v1/api_keys'].post.responses)).toContain('403');
    // Members may not change billing settings (403 forbidden).
    expect(Object.keys(doc.paths['/v1/settings'].patch.responses)).toContain('403');
    expect(Object.keys(doc.paths['/v1/settings/grace_period'].post.responses)).toContain('403');
    expect(doc.paths['/v1/subscriptions/{id}'].get.responses['404'].content['application/json'].example.error).toBe(
      'not_found',
    );
  });

  it('health reports database and Temporal reachability', async () => {
    const health = await engine.call('GET', '/health');
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: 'ok', database: { ok: true }, temporal: { ok: true } });
  });
});

describe('HTTP edge when a dependency is down', () => {
  it('answers 503 service_unavailable with Retry-After (not 500) without leaking a stack, and health says degraded (503)', async () => {
    const engine = await startTestEngine({ startWorker: false });
    // An ORM pointed at a port where no database listens.
    const deadOrm = await openOrm(`postgres://postgres:postgres@127.0.0.1:${await freePort()}/nothing`);
    const app = createApp({
      orm: deadOrm,
      temporal: engine.env.client,
      config: engine.config,
      logger: createLogger('silent'),
    });
    const call = async (path: string) => {
      const response = await app.request(path, { headers: engine.tenant.headers });
      return {
        status: response.status,
        body: (await response.json()) as any,
        retryAfter: response.headers.get('retry-after'),
      };
    };
    try {
      const response = await call('/v1/customers/cus_anything');
      expect(response.status).toBe(503);
      expect(Number(response.retryAfter)).toBeGreaterThan(0);
      expect(response.body.error).toBe('service_unavailable');
      expect(JSON.stringify(response.body)).not.toMatch(/at .*\.ts|Error:|stack/i);
      const health = await call('/health');
      expect(health.status).toBe(503);
      expect(health.body).toMatchObject({ status: 'degraded', database: { ok: false }, temporal: { ok: true } });
    } finally {
      await engine.close();
    }
  });
});
