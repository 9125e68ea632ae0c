/**
 * Two API pieces the dashboard's merchant day needs (issue 30):
 * - password reset: POST /v1/auth/password_reset emails a one-hour link over real SMTP (the same answer
 *   for an unknown email, which gets no mail), .../confirm sets the password from it once, ends the
 *   user's sessions, and refuses a reused, forged or weak-password attempt without changing anything;
 * - GET /v1/events?related_object=: a subscription's timeline is its own events and its invoices'
 *   (never another subscription's, never another tenant's, still there behind 101 newer events of
 *   other objects), and a customer's includes both.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { seedCustomerAndPlan, startTestEngine, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

describe('password reset and events by related object', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine({ startWorker: true });
    engine.tenant = await engine.signUp();
  });
  afterAll(() => engine?.close());

  const anonymous = { authorization: '' };
  const tokenOf = (text: string) => /\/dashboard\/reset-password#token=([A-Za-z0-9_.-]+)/.exec(text)?.[1];

  it('emails a link that sets a new password once and ends every session', async () => {
    const owner = await engine.signUp({ name: 'Reset Co' });
    const before = engine.mail.messages.length;
    const unknown = await engine.call(
      'POST',
      '/v1/auth/password_reset',
      { email: 'nobody-here@example.com' },
      anonymous,
    );
    const asked = await engine.call('POST', '/v1/auth/password_reset', { email: owner.email.toUpperCase() }, anonymous);
    expect(asked.status).toBe(202);
    // Known or not, the same answer: nobody learns who has an account.
    expect(unknown).toMatchObject({ status: 202, body: { object: 'password_reset', expires_in_minutes: 60 } });
    expect(Object.keys(unknown.body)).toEqual(Object.keys(asked.body));
    const [mail] = (await engine.mail.waitFor(before + 1)).slice(before);
    expect(mail!.envelopeTo).toEqual([owner.email]);
    expect(mail!.parsed.subject).toBe('Reset your password');
    const token = tokenOf(mail!.parsed.text ?? '')!;
    expect(token).toBeTruthy();
    expect(mail!.parsed.text).toContain(`${engine.config.publicUrl}/dashboard/reset-password#token=`);

    const weak = await engine.call('POST', '/v1/auth/password_reset/confirm', { token, password: 'short' }, anonymous);
    expect(weak).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    const forged = await engine.call(
      'POST',
      '/v1/auth/password_reset/confirm',
      { token: `${token.slice(0, -3)}abc`, password: 'Another-Horse-43!' },
      anonymous,
    );
    expect(forged).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    // An access token is no reset token (another key and audience).
    const accessToken = await engine.call(
      'POST',
      '/v1/auth/password_reset/confirm',
      { token: owner.accessToken, password: 'Another-Horse-43!' },
      anonymous,
    );
    expect(accessToken).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(
      (await engine.call('POST', '/v1/auth/login', { email: owner.email, password: owner.password }, anonymous)).status,
    ).toBe(200);

    const done = await engine.call(
      'POST',
      '/v1/auth/password_reset/confirm',
      { token, password: 'Another-Horse-43!' },
      anonymous,
    );
    expect(done).toMatchObject({ status: 200, body: { object: 'password_reset', reset: true } });
    expect(done.body.sessions_ended).toBe(2);
    // The old session is over; the old password fails, the new one works; the link is spent.
    expect((await engine.call('GET', '/v1/account', undefined, owner.headers)).status).toBe(401);
    expect(
      (await engine.call('POST', '/v1/auth/login', { email: owner.email, password: owner.password }, anonymous)).status,
    ).toBe(401);
    expect(
      (await engine.call('POST', '/v1/auth/login', { email: owner.email, password: 'Another-Horse-43!' }, anonymous))
        .status,
    ).toBe(200);
    const again = await engine.call(
      'POST',
      '/v1/auth/password_reset/confirm',
      { token, password: 'Third-Horse-44!' },
      anonymous,
    );
    expect(again).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(
      (await engine.call('POST', '/v1/auth/login', { email: owner.email, password: 'Another-Horse-43!' }, anonymous))
        .status,
    ).toBe(200);
    // The unknown email got no mail.
    expect(engine.mail.messages.some((m) => m.envelopeTo.includes('nobody-here@example.com'))).toBe(false);
  });

  it('throttles reset requests per email', async () => {
    const email = 'throttled@example.com';
    for (let i = 0; i < 5; i++)
      expect((await engine.call('POST', '/v1/auth/password_reset', { email }, anonymous)).status).toBe(202);
    const sixth = await engine.call('POST', '/v1/auth/password_reset', { email }, anonymous);
    expect(sixth).toMatchObject({ status: 429, body: { error: 'rate_limited' } });
    expect(Number(sixth.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it("answers a subscription's timeline: its events and its invoices', not its neighbours'", async () => {
    const { customerId, planId } = await seedCustomerAndPlan(engine, { trial_period_days: 0 });
    const first = await engine.call('POST', '/v1/subscriptions', { customer_id: customerId, plan: planId });
    const second = await engine.call('POST', '/v1/subscriptions', { customer_id: customerId, plan: planId });
    expect([first.status, second.status]).toEqual([201, 201]);
    const typesOf = async (id: string) => {
      const page = await engine.call('GET', `/v1/events?related_object=${id}&limit=100`);
      expect(page.status).toBe(200);
      return page.body.data as { type: string; data: { object: Record<string, unknown> } }[];
    };
    await eventually(
      () => typesOf(first.body.id),
      (events) => events.some((e) => e.type === 'invoice.paid'),
    );
    const own = await typesOf(first.body.id);
    expect(own.map((e) => e.type)).toEqual(
      expect.arrayContaining(['subscription.created', 'invoice.created', 'invoice.paid']),
    );
    for (const event of own)
      expect([event.data.object.id, event.data.object.subscription_id, event.data.object.subscription]).toContain(
        first.body.id,
      );
    expect(own.some((e) => JSON.stringify(e).includes(second.body.id))).toBe(false);
    // The customer's timeline has both subscriptions and the customer itself.
    const customers = await typesOf(customerId);
    expect(customers.map((e) => e.type)).toContain('customer.created');
    expect(
      customers
        .filter((e) => e.type === 'subscription.created')
        .map((e) => e.data.object.id)
        .sort(),
    ).toEqual([first.body.id, second.body.id].sort());
    // A busy account: 101 newer events of other objects do not push the subscription's out of its first page.
    await Promise.all(
      Array.from({ length: 101 }, (_, i) => engine.call('POST', '/v1/customers', { email: `busy${i}@example.com` })),
    );
    expect(
      (await engine.call('GET', '/v1/events?limit=100')).body.data.some(
        (e: { type: string }) => e.type === 'subscription.created',
      ),
    ).toBe(false);
    expect((await typesOf(first.body.id)).map((e) => e.type)).toContain('subscription.created');
    // With a type, both filters hold; another tenant sees nothing of it.
    const paid = await engine.call('GET', `/v1/events?related_object=${first.body.id}&type=invoice.*`);
    expect(paid.body.data.length).toBeGreaterThan(0);
    expect(paid.body.data.every((e: { type: string }) => e.type.startsWith('invoice.'))).toBe(true);
    const other = await engine.signUp();
    expect(
      (await engine.call('GET', `/v1/events?related_object=${first.body.id}`, undefined, other.headers)).body.data,
    ).toEqual([]);
    expect((await engine.call('GET', `/v1/events?related_object=${'x'.repeat(300)}`)).status).toBe(400);
  });
});
