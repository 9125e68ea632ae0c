import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Charge, Customer } from '../db/entities/index.ts';
import { formatDate } from '../domain/email-templates.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import type { CapturedMail } from './helpers/smtp.ts';
import { eventually } from './helpers/temporal.ts';

const minute = 60_000;
const hour = 60 * minute;
const day = 24 * hour;

/**
 * Failed payments, end to end in skipped time: retries on the account's policy,
 * an email over real SMTP at every failed attempt, the grace period, and the end
 * (cancel or pause), or recovery.
 */
describe('dunning', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  const get = async (id: string) => (await engine.call('GET', `/v1/subscriptions/${id}`)).body;
  async function skipTo(instant: number) {
    const ahead = instant - (await engine.env.currentTimeMs());
    if (ahead > 0) await engine.env.sleep(ahead);
  }
  /** A customer whose card is declined, on a monthly plan, subscribed without a trial: past due at once. */
  async function pastDueSubscription(email: string, extra: Record<string, unknown> = {}) {
    const customer = await engine.call('POST', '/v1/customers', {
      email,
      name: 'Ada',
      payment_method: 'pm_card_chargeDeclined',
    });
    const plan = await engine.call('POST', '/v1/plans', {
      name: 'Team',
      amount: 4900,
      currency: 'USD',
      interval: 'month',
    });
    const sub = await engine.call('POST', '/v1/subscriptions', {
      customer_id: customer.body.id,
      plan: plan.body.id,
      trial_period_days: 0,
      ...extra,
    });
    expect(sub.status).toBe(201);
    expect(sub.body).toMatchObject({
      status: 'past_due',
      dunning: { attempt_count: 1, last_payment_error: { code: 'card_declined' } },
    });
    return {
      id: sub.body.id as string,
      customerId: customer.body.id as string,
      firstFailedAt: Date.parse(sub.body.dunning.first_failed_at),
      sub: sub.body,
    };
  }
  const mailTo = (to: string) => engine.mail.messages.filter((m) => m.envelopeTo.includes(to));
  const waitForMail = (to: string, count: number) =>
    eventually(
      async () => mailTo(to),
      (m) => m.length >= count,
    );
  const attempts = (id: string) =>
    engine.db.orm.em.fork().find(Charge, { idempotencyKey: { $like: `${id}:%` } }, { orderBy: { createdAt: 'asc' } });

  function expectFailureEmail(mail: CapturedMail, attempt: number, next: { retryAt?: number; graceEndsAt?: number }) {
    expect(mail.parsed.subject).toBe(
      `[TEST] Payment failed for invoice ${mail.parsed.subject!.match(/invoice (\S+)/)![1]} (attempt ${attempt})`,
    );
    const text = mail.parsed.text!;
    expect(text).toContain('$49.00');
    expect(text).toContain('Reason: Your card was declined.');
    if (next.retryAt) expect(text).toContain(`We will try again on ${formatDate(new Date(next.retryAt), true)}.`);
    if (next.graceEndsAt)
      expect(text).toContain(`Unless the invoice is paid by ${formatDate(new Date(next.graceEndsAt), true)}`);
    expect(mail.parsed.html).toContain('Update billing details');
    // From the merchant: the account's name with MAIL_FROM's address.
    expect(mail.parsed.from!.value).toEqual([{ name: 'Acme', address: 'billing@test.example' }]);
    return text.match(/http:\/\/\S+\/billing\/\S+/)![0];
  }

  it('four failures on the default schedule, four emails, the grace period, then cancel', async () => {
    const wall = Date.now();
    const { id, firstFailedAt, sub } = await pastDueSubscription('four-failures@example.com');
    // Default policy: attempt 1 now (failed), then 24 h, 3 d and 7 d after the first failure.
    expect(Date.parse(sub.dunning.next_payment_attempt)).toBe(firstFailedAt + day);
    const [first] = await waitForMail('four-failures@example.com', 1);
    const link = expectFailureEmail(first!, 1, { retryAt: firstFailedAt + day });

    // The link opens the billing-details page, which shows what is due.
    const page = await engine.app.request(new URL(link).pathname);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('$49.00');
    expect(html).toContain('Your card was declined.');

    for (const [attempt, at, next] of [
      [2, day, 3 * day],
      [3, 3 * day, 7 * day],
    ] as const) {
      await skipTo(firstFailedAt + at - minute);
      expect(await attempts(id)).toHaveLength(attempt - 1);
      await skipTo(firstFailedAt + at + minute);
      const mails = await waitForMail('four-failures@example.com', attempt);
      expectFailureEmail(mails[attempt - 1]!, attempt, { retryAt: firstFailedAt + next });
      expect((await get(id)).dunning).toMatchObject({
        attempt_count: attempt,
        next_payment_attempt: new Date(firstFailedAt + next).toISOString(),
      });
    }
    // Attempt 4 is the last: the grace period (7 days by default) starts.
    await skipTo(firstFailedAt + 7 * day + minute);
    const mails = await waitForMail('four-failures@example.com', 4);
    const afterFourth = await get(id);
    expect(afterFourth).toMatchObject({
      status: 'past_due',
      dunning: { attempt_count: 4, next_payment_attempt: null },
    });
    const graceEndsAt = Date.parse(afterFourth.dunning.grace_period_ends_at);
    expect(graceEndsAt - (firstFailedAt + 7 * day)).toBeGreaterThanOrEqual(7 * day);
    expect(graceEndsAt - (firstFailedAt + 7 * day)).toBeLessThan(7 * day + minute);
    expectFailureEmail(mails[3]!, 4, { graceEndsAt });

    await skipTo(graceEndsAt - hour);
    expect((await get(id)).status).toBe('past_due');
    await skipTo(graceEndsAt + hour);
    const canceled = await eventually(
      () => get(id),
      (s) => s.status === 'canceled',
    );
    expect(canceled).toMatchObject({ ended_reason: 'payment_failed', dunning: null });
    expect((await attempts(id)).map((c) => c.idempotencyKey)).toEqual(
      [1, 2, 3, 4].map((n) => `${id}:cycle:0:attempt:${n}`),
    );
    expect((await engine.invoices(id)).map((i) => [i.status, i.attemptCount])).toEqual([['uncollectible', 4]]);
    const ended = await waitForMail('four-failures@example.com', 5);
    expect(ended[4]!.parsed.subject).toBe('[TEST] Your subscription has been canceled');
    expect(ended[4]!.parsed.text).toContain('because its payment could not be collected');
    expect(ended[4]!.parsed.from!.value).toEqual([{ name: 'Acme', address: 'billing@test.example' }]);
    // Nothing more, ever.
    await engine.env.sleep(40 * day);
    expect(await attempts(id)).toHaveLength(4);
    expect(mailTo('four-failures@example.com')).toHaveLength(5);
    // Months of skipped time in seconds of wall time: a year of real waiting could never pass this. The bound is
    // loose on purpose (a loaded 2-core machine took 17 s); speed itself is measured by the benchmarks.
    expect(Date.now() - wall).toBeLessThan(60_000);
  });

  it('ends in a pause when the account says so, after its own grace period', async () => {
    const other = await engine.signUp();
    const asOther = (method: string, path: string, body?: unknown) => engine.call(method, path, body, other.headers);
    expect((await asOther('POST', '/v1/settings/grace_period', { days: 3 })).body).toMatchObject({
      grace_period_days: 3,
    });
    const settings = await asOther('PATCH', '/v1/settings', {
      dunning_final_action: 'pause',
      retry_policy: { max_attempts: 2, intervals: ['immediate', '2d'] },
    });
    expect(settings.body).toEqual({
      object: 'billing_settings',
      grace_period_days: 3,
      dunning_final_action: 'pause',
      retry_policy: { max_attempts: 2, intervals: ['immediate', '2d'] },
    });
    const customer = await asOther('POST', '/v1/customers', {
      email: 'pauses@example.com',
      payment_method: 'pm_card_insufficientFunds',
    });
    const plan = await asOther('POST', '/v1/plans', { name: 'Solo', amount: 900, currency: 'USD', interval: 'month' });
    const sub = (await asOther('POST', '/v1/subscriptions', { customer_id: customer.body.id, plan: plan.body.id }))
      .body;
    const first = Date.parse(sub.dunning.first_failed_at);
    await skipTo(first + 2 * day + minute);
    const last = await eventually(
      async () => (await asOther('GET', `/v1/subscriptions/${sub.id}`)).body,
      (s) => s.dunning?.attempt_count === 2,
    );
    const graceEndsAt = Date.parse(last.dunning.grace_period_ends_at);
    expect(graceEndsAt - (first + 2 * day)).toBeGreaterThanOrEqual(3 * day);
    await skipTo(graceEndsAt + minute);
    const paused = await eventually(
      async () => (await asOther('GET', `/v1/subscriptions/${sub.id}`)).body,
      (s) => s.status === 'paused',
    );
    expect(paused).toMatchObject({ pause_collection: { reason: 'payment_failed', resumes_at: null }, dunning: null });
    const mails = await waitForMail('pauses@example.com', 3);
    expect(mails[0]!.parsed.text).toContain('Reason: Your card has insufficient funds.');
    expect(mails[2]!.parsed.subject).toBe('[TEST] Your subscription has been paused');
    // Bad settings change nothing.
    for (const body of [
      { retry_policy: { max_attempts: 2, intervals: ['1d', '2d'] } },
      { retry_policy: { max_attempts: 3, intervals: ['immediate', '2d'] } },
      { dunning_final_action: 'delete' },
      { grace_period_days: -1 },
    ]) {
      expect((await asOther('PATCH', '/v1/settings', body)).status, JSON.stringify(body)).toBe(400);
    }
    expect((await asOther('POST', '/v1/settings/grace_period', { days: 'seven' })).status).toBe(400);
    expect((await asOther('GET', '/v1/settings')).body).toEqual(settings.body);
  });

  it('recovers when the third attempt succeeds', async () => {
    const { id, customerId, firstFailedAt } = await pastDueSubscription('recovers@example.com');
    await skipTo(firstFailedAt + day + minute);
    await eventually(
      () => get(id),
      (s) => s.dunning?.attempt_count === 2,
    );
    // The bank now accepts the same card (changed behind the API: no immediate retry).
    await engine.db.orm.em.fork().nativeUpdate(Customer, { id: customerId }, { paymentMethod: 'pm_card_visa' });
    await skipTo(firstFailedAt + 3 * day + minute);
    const recovered = await eventually(
      () => get(id),
      (s) => s.status === 'active',
    );
    expect(recovered.dunning).toBeNull();
    expect((await attempts(id)).map((c) => c.status)).toEqual(['failed', 'failed', 'succeeded']);
    expect((await engine.invoices(id)).map((i) => i.status)).toEqual(['paid']);
    const mails = await waitForMail('recovers@example.com', 3);
    expect(mails.map((m) => m.parsed.subject)).toEqual([
      expect.stringMatching(/attempt 1\)$/),
      expect.stringMatching(/attempt 2\)$/),
      expect.stringMatching(/^\[TEST\] Payment received for invoice/),
    ]);
    // The receipt of the recovered invoice links its PDF (signed), from the merchant's name.
    const [invoice] = await engine.invoices(id);
    expect(mails[2]!.parsed.text).toMatch(
      new RegExp(`Your invoice as a PDF: http://\\S+/invoices/${invoice!.id}/pdf\\?token=[A-Za-z0-9_-]{43}`),
    );
    expect(mails[2]!.parsed.from!.value).toEqual([{ name: 'Acme', address: 'billing@test.example' }]);
    // And it renews at its period end as usual.
    await skipTo(Date.parse(recovered.current_period_end) + hour);
    await eventually(
      () => engine.subscription(id),
      (s) => s?.billingCycle === 1,
    );
  });

  it('a new payment method during the grace period retries at once', async () => {
    const { id, firstFailedAt, customerId } = await pastDueSubscription('grace@example.com');
    await skipTo(firstFailedAt + 7 * day + minute);
    const inGrace = await eventually(
      () => get(id),
      (s) => s.dunning?.attempt_count === 4,
    );
    expect(inGrace.dunning.grace_period_ends_at).not.toBeNull();
    const mails = await waitForMail('grace@example.com', 4);
    const link = new URL(mails[3]!.parsed.text!.match(/http:\/\/\S+\/billing\/\S+/)![0]).pathname;
    const form = (method: string) =>
      engine.app.request(link, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `payment_method=${method}`,
      });
    // A card that declines is refused on the page, with the reason, and the form offered again; nothing saved or charged.
    const declined = await form('pm_card_insufficientFunds');
    expect(declined.status).toBe(402);
    const declinedHtml = await declined.text();
    expect(declinedHtml).not.toContain('Saved');
    expect(declinedHtml).toContain('was declined: Your card has insufficient funds. (insufficient_funds)');
    expect(declinedHtml).toContain('<form method="post">');
    expect((await engine.call('GET', `/v1/customers/${customerId}`)).body.payment_method).toBe(
      'pm_card_chargeDeclined',
    );
    expect(await attempts(id)).toHaveLength(4);
    const updatedEvents = async () =>
      (await engine.call('GET', '/v1/events?type=customer.updated&limit=100')).body.data.filter(
        (e: any) => e.data.object.id === customerId,
      );
    expect(await updatedEvents()).toHaveLength(0);
    // The customer follows the link and picks a working card: saved, charged now.
    const saved = await engine.app.request(link, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'payment_method=pm_card_visa',
    });
    expect(saved.status).toBe(200);
    expect(await saved.text()).toContain('Saved');
    const active = await eventually(
      () => get(id),
      (s) => s.status === 'active',
    );
    expect(active.dunning).toBeNull();
    // Changing the card there is a customer update like PATCH /v1/customers/{id}.
    expect((await updatedEvents()).map((e: any) => e.data.object.payment_method)).toEqual(['pm_card_visa']);
    expect((await attempts(id)).map((c) => [c.idempotencyKey.split(':').at(-1), c.status])).toEqual([
      ['1', 'failed'],
      ['2', 'failed'],
      ['3', 'failed'],
      ['4', 'failed'],
      ['5', 'succeeded'],
    ]);
    // A forged or tampered link shows a page, not an error trace.
    const forged = await engine.app.request(`${link.slice(0, -4)}AAAA`);
    expect(forged.status).toBe(404);
    expect(await forged.text()).toContain('This link is not valid');
  });

  it("a per-subscription grace period overrides the account's", async () => {
    const { id, firstFailedAt } = await pastDueSubscription('own-grace@example.com', { grace_period_days: 1 });
    await skipTo(firstFailedAt + 7 * day + minute);
    const last = await eventually(
      () => get(id),
      (s) => s.dunning?.attempt_count === 4,
    );
    expect(Date.parse(last.dunning.grace_period_ends_at) - (firstFailedAt + 7 * day)).toBeLessThan(day + minute);
    await skipTo(firstFailedAt + 8 * day + hour);
    await eventually(
      () => get(id),
      (s) => s.status === 'canceled',
    );
  });
});
