import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { AccountBalance, Event, Payout } from '../db/entities/index.ts';
import { webhookEndpointDisabledEmail } from '../domain/email-templates.ts';
import { eventTypes, subscriptionEventType } from '../domain/events.ts';
import { initialSnapshot, type SubscriptionSnapshot } from '../domain/subscription.ts';
import { invoicePdfUrl } from '../objects/invoice.ts';
import { recordEvent } from '../services/events/record.ts';
import { openInvoice } from '../services/invoices/cycle-invoices.ts';
import { projectSubscription } from '../services/subscriptions/projection.ts';
import { startTestEngine, type Tenant, type TestEngine } from './helpers/engine.ts';
import { eventually } from './helpers/temporal.ts';

const minute = 60_000;
const hour = 60 * minute;
const day = 24 * hour;

/**
 * Events: every state change records exactly its events in the same database
 * transaction (a rolled-back change records none, a retried projection write none
 * again); the events API; payouts; notification preferences honored by every sender.
 */
describe('events', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());

  const call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
    engine.call(method, path, body, headers);
  /** The platform admin acting on one account: the only caller that may make a live credit. */
  const adminFor = async (accountId: string) => ({ ...(await engine.admin()).headers, 'x-account-id': accountId });
  /** Every event about one resource (by data.object.id), oldest first, as the API shows them. */
  async function eventsAbout(objectId: string) {
    const rows = await engine.db.orm.em
      .getConnection()
      .execute<
        { id: string; account_id: string; livemode: boolean }[]
      >(`select id, account_id, livemode from events where data->'object'->>'id' = ? order by id`, [objectId]);
    return Promise.all(rows.map((row) => call('GET', `/v1/events/${row.id}`, undefined, headersOf(row))));
  }
  let tenantsById: Map<string, Tenant>;
  const headersOf = (row: { account_id: string; livemode: boolean }) => ({
    ...(tenantsById.get(row.account_id)?.headers ?? engine.tenant.headers),
    ...(row.livemode ? {} : { 'x-sandbox-mode': 'true' }),
  });
  const typesAbout = async (objectId: string) => (await eventsAbout(objectId)).map((e) => e.body.type);
  const countEvents = (accountId = engine.tenant.accountId) => engine.db.orm.em.fork().count(Event, { accountId });
  const mailTo = (to: string) => engine.mail.messages.filter((m) => m.envelopeTo.includes(to));
  async function skipTo(instant: number) {
    const ahead = instant - (await engine.env.currentTimeMs());
    if (ahead > 0) await engine.env.sleep(ahead);
  }
  /** How many times activity `name` completed in a workflow's history (all runs are not needed: each test's workflow is short). */
  async function activityCompletions(workflowId: string, name: string): Promise<number> {
    const history = await engine.env.client.workflow.getHandle(workflowId).fetchHistory();
    const scheduled = new Map<string, string>();
    let count = 0;
    for (const event of history.events ?? []) {
      const attrs = event.activityTaskScheduledEventAttributes;
      if (attrs) scheduled.set(String(event.eventId), attrs.activityType?.name ?? '');
      const done = event.activityTaskCompletedEventAttributes;
      if (done && scheduled.get(String(done.scheduledEventId)) === name) count++;
    }
    return count;
  }

  beforeAll(() => {
    tenantsById = new Map([[engine.tenant.accountId, engine.tenant]]);
  });

  describe('the outbox', () => {
    it('commits an event with the change and drops it when the change rolls back', async () => {
      const em = engine.db.orm.em.fork();
      const before = await em.count(Event, { accountId: 'acct_outbox' });
      const kept = await em.transactional((tx) =>
        recordEvent(tx, {
          accountId: 'acct_outbox',
          livemode: false,
          type: 'customer.created',
          object: { id: 'cus_1', object: 'customer' },
          transactionId: null,
        }),
      );
      await expect(
        em.transactional(async (tx) => {
          await recordEvent(tx, {
            accountId: 'acct_outbox',
            livemode: false,
            type: 'customer.updated',
            object: { id: 'cus_1' },
          });
          throw new Error('the change failed');
        }),
      ).rejects.toThrow('the change failed');
      const rows = await engine.db.orm.em.fork().find(Event, { accountId: 'acct_outbox' });
      expect(rows).toHaveLength(before + 1);
      expect(rows[0]).toMatchObject({
        id: kept.id,
        transactionId: null,
        dispatchedAt: null,
        data: { object: { id: 'cus_1', object: 'customer' } },
      });
      expect(rows[0]!.id).toMatch(/^evt_[0-9a-z]{26}$/);
      const [undispatched] = await engine.db.orm.em
        .getConnection()
        .execute(`select indexdef from pg_indexes where indexname = 'events_undispatched_index'`);
      expect(undispatched.indexdef).toContain('WHERE (dispatched_at IS NULL)');
    });
  });

  describe('transactions', () => {
    // In live mode only a platform admin may credit (docs/security.md).
    const create = async (body: Record<string, unknown>) =>
      call(
        'POST',
        '/v1/transactions',
        { account_id: engine.tenant.accountId, currency: 'USD', ...body },
        body.type === 'credit' ? await adminFor(engine.tenant.accountId) : undefined,
      );

    it('a credit records transaction.created and transaction.succeeded with the transaction as GET shows it', async () => {
      const credit = await create({ amount: 10_000, type: 'credit', reference: 'seed' });
      expect(credit.status).toBe(201);
      const events = await eventsAbout(credit.body.id);
      expect(events.map((e) => e.body.type)).toEqual(['transaction.created', 'transaction.succeeded']);
      const current = (await call('GET', `/v1/transactions/${credit.body.id}`)).body;
      for (const event of events) {
        expect(event.status).toBe(200);
        // Exactly what a webhook delivery carries (objects/event.ts serializeEvent).
        expect(Object.keys(event.body).sort()).toEqual([
          'created_at',
          'data',
          'id',
          'livemode',
          'transaction_id',
          'type',
        ]);
        expect(event.body).toMatchObject({ livemode: true, transaction_id: credit.body.id, data: { object: current } });
        expect(Date.parse(event.body.created_at)).toBeGreaterThan(Date.now() - minute);
      }
    });

    it('a refund refused with insufficient_funds records nothing; one that fits records its two events', async () => {
      const before = await countEvents();
      const refused = await create({ amount: 999_999, type: 'refund' });
      expect(refused.status).toBe(402);
      expect(refused.body.error).toBe('insufficient_funds');
      expect(await countEvents()).toBe(before);
      const refund = await create({ amount: 1000, type: 'refund' });
      expect(await typesAbout(refund.body.id)).toEqual(['transaction.created', 'transaction.succeeded']);
      expect(await countEvents()).toBe(before + 2);
    });

    it('PATCH records transaction.updated with the new metadata; a refused PATCH nothing', async () => {
      const credit = await create({ amount: 500, type: 'credit' });
      const patched = await call('PATCH', `/v1/transactions/${credit.body.id}`, { metadata: { order: '42' } });
      expect(patched.status).toBe(200);
      const conflict = await call('PATCH', `/v1/transactions/${credit.body.id}`, { amount: 1 });
      expect(conflict.status).toBe(409);
      const events = await eventsAbout(credit.body.id);
      expect(events.map((e) => e.body.type)).toEqual([
        'transaction.created',
        'transaction.succeeded',
        'transaction.updated',
      ]);
      expect(events[2]!.body.data.object).toEqual(patched.body);
    });

    it('payments: created pending, then succeeded or failed with payment.succeeded / payment.failed', async () => {
      const paid = await create({ amount: 2500, type: 'payment', payment_method: 'pm_card_visa' });
      expect(paid.body.status).toBe('succeeded');
      const paidEvents = await eventsAbout(paid.body.id);
      expect(paidEvents.map((e) => e.body.type)).toEqual([
        'transaction.created',
        'transaction.succeeded',
        'payment.succeeded',
      ]);
      expect(paidEvents[0]!.body.data.object.status).toBe('pending');
      expect(paidEvents[2]!.body.data.object).toMatchObject({ status: 'succeeded', amount: 2500 });

      const declined = await create({ amount: 2500, type: 'payment', payment_method: 'pm_card_chargeDeclined' });
      expect(declined.body.status).toBe('failed');
      const declinedEvents = await eventsAbout(declined.body.id);
      expect(declinedEvents.map((e) => e.body.type)).toEqual([
        'transaction.created',
        'transaction.failed',
        'payment.failed',
      ]);
      expect(declinedEvents[2]!.body).toMatchObject({
        transaction_id: declined.body.id,
        data: { object: { failure_code: 'card_declined' } },
      });
    });

    it('a pending payment: canceled records transaction.canceled; settled by its workflow records the outcome', async () => {
      const canceled = await create({ amount: 700, type: 'payment', payment_method: 'pm_bank_pendingSettles' });
      expect((await call('DELETE', `/v1/transactions/${canceled.body.id}`)).status).toBe(200);
      expect((await call('DELETE', `/v1/transactions/${canceled.body.id}`)).status).toBe(409);
      expect(await typesAbout(canceled.body.id)).toEqual(['transaction.created', 'transaction.canceled']);

      const settling = await create({ amount: 800, type: 'payment', payment_method: 'pm_bank_pendingSettles' });
      const failing = await create({ amount: 900, type: 'payment', payment_method: 'pm_bank_pendingFails' });
      await engine.env.sleep(25 * hour);
      await engine.env.client.workflow.getHandle(settling.body.id).result();
      await engine.env.client.workflow.getHandle(failing.body.id).result();
      // The canceled one's settlement changed nothing and recorded nothing.
      expect(await engine.env.client.workflow.getHandle(canceled.body.id).result()).toBe('canceled');
      expect(await typesAbout(canceled.body.id)).toEqual(['transaction.created', 'transaction.canceled']);
      expect(await typesAbout(settling.body.id)).toEqual([
        'transaction.created',
        'transaction.succeeded',
        'payment.succeeded',
      ]);
      expect(await typesAbout(failing.body.id)).toEqual([
        'transaction.created',
        'transaction.failed',
        'payment.failed',
      ]);
    });
  });

  describe('subscriptions and invoices', () => {
    const snapshot = (changes: Partial<SubscriptionSnapshot>): SubscriptionSnapshot => ({
      ...initialSnapshot({
        id: 'sub_projection_retries',
        accountId: engine.tenant.accountId,
        customerId: 'cus_x',
        planId: 'plan_a',
        livemode: true,
        trialDays: 14,
        billingCycleMode: 'anniversary',
        pauseUntil: null,
        gracePeriodDays: null,
      }),
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:00.000Z',
      trialStart: '2026-01-01T00:00:00.000Z',
      trialEnd: '2026-01-15T00:00:00.000Z',
      version: 1,
      ...changes,
    });

    it('a retried or late projection write records no event; each new version records one', async () => {
      const project = (s: SubscriptionSnapshot) => projectSubscription(engine.db.orm.em.fork(), s);
      const v1 = snapshot({});
      await project(v1);
      await project(v1);
      await Promise.all([project(v1), project(v1)]);
      expect(await typesAbout(v1.id)).toEqual(['subscription.created']);
      const v2 = snapshot({ version: 2, cancelAtPeriodEnd: true, updatedAt: '2026-01-02T00:00:00.000Z' });
      await project(v2);
      await project(v2);
      await project(v1); // late: older than the row
      const v3 = snapshot({
        version: 3,
        status: 'canceled',
        canceledAt: '2026-01-15T00:00:00.000Z',
        endedReason: 'requested',
      });
      await Promise.all([project(v3), project(v3), project(v2)]);
      const events = await eventsAbout(v1.id);
      expect(events.map((e) => e.body.type)).toEqual([
        'subscription.created',
        'subscription.updated',
        'subscription.canceled',
      ]);
      expect(events.map((e) => e.body.transaction_id)).toEqual([null, null, null]);
      expect(events[1]!.body.data.object).toMatchObject({
        id: v1.id,
        object: 'subscription',
        cancel_at_period_end: true,
        status: 'trialing',
      });
      expect(events[2]!.body.data.object).toMatchObject({ status: 'canceled', ended_reason: 'requested' });
    });

    it('names each write by its status change, else a plan change, else updated', () => {
      const at = (status: string, planId = 'plan_a') => ({ status, planId });
      expect(subscriptionEventType(null, at('past_due'))).toBe('subscription.created');
      expect(subscriptionEventType(at('active'), at('past_due'))).toBe('subscription.past_due');
      expect(subscriptionEventType(at('past_due'), at('canceled'))).toBe('subscription.canceled');
      expect(subscriptionEventType(at('trialing'), at('expired'))).toBe('subscription.expired');
      expect(subscriptionEventType(at('active'), at('paused'))).toBe('subscription.paused');
      expect(subscriptionEventType(at('paused'), at('active'))).toBe('subscription.resumed');
      expect(subscriptionEventType(at('paused'), at('trialing'))).toBe('subscription.resumed');
      expect(subscriptionEventType(at('past_due'), at('active'))).toBe('subscription.updated');
      expect(subscriptionEventType(at('trialing'), at('active'))).toBe('subscription.updated');
      expect(subscriptionEventType(at('active'), at('active', 'plan_b'))).toBe('subscription.plan_changed');
      expect(subscriptionEventType(at('active'), at('active'))).toBe('subscription.updated');
    });

    it('a paid first charge: invoice.created, invoice.paid, payment.succeeded, subscription.created, and a receipt with a working PDF link', async () => {
      const customer = await call('POST', '/v1/customers', {
        email: 'receipt@example.com',
        name: 'Rita',
        payment_method: 'pm_card_visa',
      });
      const plan = await call('POST', '/v1/plans', {
        name: 'Starter',
        amount: 1500,
        currency: 'USD',
        interval: 'month',
      });
      const sub = await call('POST', '/v1/subscriptions', {
        customer_id: customer.body.id,
        plan: plan.body.id,
        trial_period_days: 0,
      });
      expect(sub.body.status).toBe('active');
      const invoiceId = sub.body.latest_invoice as string;
      const invoice = (await call('GET', `/v1/invoices/${invoiceId}`)).body;
      const invoiceEvents = await eventsAbout(invoiceId);
      expect(invoiceEvents.map((e) => e.body.type)).toEqual(['invoice.created', 'invoice.paid', 'payment.succeeded']);
      expect(invoiceEvents[0]!.body.data.object).toMatchObject({ status: 'open', amount_paid: 0, pdf: invoice.pdf });
      expect(invoiceEvents[1]!.body.data.object).toEqual(invoice);
      // The charge is a payment transaction: invoice.paid and payment.succeeded name it (issue #11); invoice.created came before it.
      expect(invoice.transaction).toMatch(/^txn_/);
      expect(invoiceEvents.map((e) => e.body.transaction_id)).toEqual([null, invoice.transaction, invoice.transaction]);
      expect(await typesAbout(sub.body.id)).toEqual(['subscription.created']);
      expect(await typesAbout(customer.body.id)).toEqual(['customer.created']);

      const [receipt] = await eventually(
        async () => mailTo('receipt@example.com'),
        (m) => m.length >= 1,
      );
      expect(receipt!.parsed.subject).toBe(`[TEST] Receipt for invoice ${invoice.number} ($15.00)`);
      expect(receipt!.parsed.text).toContain('Thank you for your payment of $15.00 to Acme');
      // The line names its period in the account's language (human dates, issue #12).
      expect(receipt!.parsed.text).toMatch(
        /Starter \([A-Z][a-z]{2} \d{1,2}, \d{4} – [A-Z][a-z]{2} \d{1,2}, \d{4}\): \$15\.00/,
      );
      const link = receipt!.parsed.text!.match(/http:\/\/\S+\/invoices\/\S+/)![0];
      expect(link).toBe(invoice.pdf);
      const pdf = await engine.app.request(new URL(link).pathname + new URL(link).search);
      expect(pdf.status).toBe(200);
      expect(pdf.headers.get('content-type')).toBe('application/pdf');
      expect(receipt!.parsed.html).toContain('Download the invoice (PDF)');
    });

    it('trial, plan change, pause, resume and cancel: one subscription event per change', async () => {
      const customer = await call('POST', '/v1/customers', {
        email: 'lifecycle@example.com',
        name: 'Lin',
        payment_method: 'pm_card_visa',
      });
      const basic = await call('POST', '/v1/plans', {
        name: 'Basic',
        amount: 1000,
        currency: 'USD',
        interval: 'month',
      });
      const pro = await call('POST', '/v1/plans', { name: 'Pro', amount: 3000, currency: 'USD', interval: 'month' });
      const sub = await call('POST', '/v1/subscriptions', {
        customer_id: customer.body.id,
        plan: basic.body.id,
        trial_period_days: 7,
      });
      expect(sub.body.status).toBe('trialing');
      await skipTo(Date.parse(sub.body.trial_end) + hour);
      await eventually(
        async () => (await call('GET', `/v1/subscriptions/${sub.body.id}`)).body,
        (s) => s.status === 'active',
      );
      const upgraded = await call('POST', `/v1/subscriptions/${sub.body.id}/update`, { plan: pro.body.id });
      expect(upgraded.status).toBe(200);
      expect((await call('POST', `/v1/subscriptions/${sub.body.id}/pause`)).body.status).toBe('paused');
      expect((await call('POST', `/v1/subscriptions/${sub.body.id}/resume`)).body.status).toBe('active');
      expect((await call('POST', `/v1/subscriptions/${sub.body.id}/cancel`)).body.status).toBe('canceled');
      await engine.env.client.workflow.getHandle(sub.body.id).result();
      expect(await typesAbout(sub.body.id)).toEqual([
        'subscription.created',
        'subscription.updated', // the trial converted: first charge
        'subscription.plan_changed',
        'subscription.paused',
        'subscription.resumed',
        'subscription.canceled',
      ]);
      // The upgrade's prorated invoice: opened, paid.
      expect(await typesAbout(upgraded.body.latest_invoice)).toEqual([
        'invoice.created',
        'invoice.paid',
        'payment.succeeded',
      ]);
      // The customer heard about the cancellation (preferences on by default).
      await eventually(
        async () => mailTo('lifecycle@example.com'),
        (m) => m.some((mail) => mail.parsed.subject === '[TEST] Your subscription has been canceled'),
      );
    });

    it('void and mark_uncollectible through the API record invoice.voided / invoice.marked_uncollectible; a refused one nothing', async () => {
      const links = { invoicePdfUrl: (id: string) => invoicePdfUrl(engine.config, id) };
      const input = (billingKey: string) => ({
        billingKey,
        subscriptionId: 'sub_manual',
        accountId: engine.tenant.accountId,
        customerId: 'cus_manual',
        currency: 'USD',
        lines: [
          {
            description: 'Manual',
            amount: 1200,
            quantity: 1,
            period_start: '2026-01-01T00:00:00.000Z',
            period_end: '2026-02-01T00:00:00.000Z',
          },
        ],
        periodStart: '2026-01-01T00:00:00.000Z',
        periodEnd: '2026-02-01T00:00:00.000Z',
        issuedAt: '2026-01-01T00:00:00.000Z',
        livemode: true,
      });
      const a = await openInvoice(engine.db.orm.em.fork(), links, input('manual:a'));
      const again = await openInvoice(engine.db.orm.em.fork(), links, input('manual:a'));
      expect(again.invoiceId).toBe(a.invoiceId);
      const b = await openInvoice(engine.db.orm.em.fork(), links, input('manual:b'));
      expect((await call('POST', `/v1/invoices/${a.invoiceId}/void`)).status).toBe(200);
      expect((await call('POST', `/v1/invoices/${a.invoiceId}/void`)).status).toBe(409);
      expect((await call('POST', `/v1/invoices/${b.invoiceId}/mark_uncollectible`)).status).toBe(200);
      expect(await typesAbout(a.invoiceId)).toEqual(['invoice.created', 'invoice.voided']);
      expect(await typesAbout(b.invoiceId)).toEqual(['invoice.created', 'invoice.marked_uncollectible']);
      expect((await eventsAbout(a.invoiceId))[1]!.body.data.object).toMatchObject({
        status: 'void',
        amount_remaining: 0,
      });
    });
  });

  describe('failed payments and notification preferences', () => {
    let tenant: Tenant;
    const as = (method: string, path: string, body?: unknown) => call(method, path, body, tenant.headers);

    beforeAll(async () => {
      tenant = await engine.signUp({ name: 'Quiet Co' });
      tenantsById.set(tenant.accountId, tenant);
    });

    it("defaults every preference to on; PATCH changes only what it names and records account.updated in the caller's mode only", async () => {
      expect((await as('GET', '/v1/settings/notifications')).body).toEqual({
        object: 'notification_settings',
        payout_confirmations: true,
        failed_payments: true,
        subscription_cancellations: true,
      });
      const patched = await as('PATCH', '/v1/settings/notifications', {
        failed_payments: false,
        subscription_cancellations: false,
      });
      expect(patched.body).toEqual({
        object: 'notification_settings',
        payout_confirmations: true,
        failed_payments: false,
        subscription_cancellations: false,
      });
      expect((await as('GET', '/v1/settings/notifications')).body).toEqual(patched.body);
      expect((await as('PATCH', '/v1/settings/notifications', { failed_payments: 'no' })).status).toBe(400);
      expect((await as('PATCH', '/v1/settings/notifications', { sms: true })).status).toBe(400);
      // Billing settings are untouched; the preferences are the live mode's (settings per mode), not the account's.
      expect((await as('GET', '/v1/settings')).body.grace_period_days).toBe(7);
      expect((await as('GET', '/v1/account')).body.settings).toEqual({
        currency: 'USD',
        timezone: 'UTC',
        language: 'en',
      });
      const live = await as('GET', '/v1/events?type=account.updated');
      const sandbox = await call('GET', '/v1/events?type=account.updated', undefined, {
        ...tenant.headers,
        'x-sandbox-mode': 'true',
      });
      expect(live.body.data).toHaveLength(1);
      expect(sandbox.body.data).toHaveLength(0);
      expect(live.body.data[0]).toMatchObject({
        livemode: true,
        data: { object: { id: tenant.accountId, object: 'account' } },
      });
    });

    it('failed_payments off: dunning runs and records its events, but the customer gets no email until it is on again', async () => {
      const customer = await as('POST', '/v1/customers', {
        email: 'quiet@example.com',
        name: 'Q',
        payment_method: 'pm_card_chargeDeclined',
      });
      const plan = await as('POST', '/v1/plans', { name: 'Team', amount: 4900, currency: 'USD', interval: 'month' });
      const sub = await as('POST', '/v1/subscriptions', {
        customer_id: customer.body.id,
        plan: plan.body.id,
        trial_period_days: 0,
      });
      expect(sub.body).toMatchObject({ status: 'past_due', dunning: { attempt_count: 1 } });
      const invoiceId = sub.body.latest_invoice as string;
      await eventually(
        () => activityCompletions(sub.body.id, 'notifyPaymentFailed'),
        (n) => n >= 1,
      );
      expect(await typesAbout(invoiceId)).toEqual(['invoice.created', 'invoice.payment_failed', 'payment.failed']);
      const failed = (await eventsAbout(invoiceId))[2]!.body;
      // The declined attempt is a failed payment transaction, named by the events of the failure.
      const [declined] = (await as('GET', '/v1/transactions?status=failed')).body.data.filter(
        (t: { invoice: string }) => t.invoice === invoiceId,
      );
      expect(declined).toMatchObject({ type: 'payment', failure_code: 'card_declined' });
      expect(failed).toMatchObject({
        transaction_id: declined.id,
        data: { object: { id: invoiceId, status: 'open', attempt_count: 1 } },
      });

      // Attempt 2, 24 hours later: still declined, still no email.
      const firstFailedAt = Date.parse(sub.body.dunning.first_failed_at);
      await skipTo(firstFailedAt + day + minute);
      await eventually(
        () => activityCompletions(sub.body.id, 'notifyPaymentFailed'),
        (n) => n >= 2,
      );
      expect((await as('GET', `/v1/subscriptions/${sub.body.id}`)).body.dunning.attempt_count).toBe(2);
      expect(mailTo('quiet@example.com')).toHaveLength(0);
      expect(await typesAbout(invoiceId)).toEqual([
        'invoice.created',
        'invoice.payment_failed',
        'payment.failed',
        'invoice.payment_failed',
        'payment.failed',
      ]);
      expect(await typesAbout(sub.body.id)).toEqual(['subscription.created', 'subscription.updated']);

      // Back on: attempt 3 (3 days after the first failure) emails.
      await as('PATCH', '/v1/settings/notifications', { failed_payments: true });
      await skipTo(firstFailedAt + 3 * day + minute);
      const [mail] = await eventually(
        async () => mailTo('quiet@example.com'),
        (m) => m.length >= 1,
      );
      expect(mail!.parsed.subject).toMatch(/^\[TEST\] Payment failed for invoice \S+ \(attempt 3\)$/);
      expect(mailTo('quiet@example.com')).toHaveLength(1);

      // subscription_cancellations is still off: canceling sends nothing.
      expect((await as('POST', `/v1/subscriptions/${sub.body.id}/cancel`)).body.status).toBe('canceled');
      await engine.env.client.workflow.getHandle(sub.body.id).result();
      expect(await activityCompletions(sub.body.id, 'notifySubscriptionEnded')).toBe(1);
      expect(mailTo('quiet@example.com')).toHaveLength(1);
      expect((await typesAbout(sub.body.id)).at(-1)).toBe('subscription.canceled');
      // Canceling marked the unpaid invoice uncollectible.
      expect((await typesAbout(invoiceId)).at(-1)).toBe('invoice.marked_uncollectible');
    });
  });

  describe('payouts', () => {
    let tenant: Tenant;
    const as = (method: string, path: string, body?: unknown) => call(method, path, body, tenant.headers);
    const balance = async () =>
      (
        await engine.db.orm.em
          .fork()
          .findOne(AccountBalance, { accountId: tenant.accountId, livemode: true, currency: 'USD' })
      )?.available ?? 0;

    beforeAll(async () => {
      tenant = await engine.signUp({ name: 'Payee Inc' });
      tenantsById.set(tenant.accountId, tenant);
      const destination = await as('POST', '/v1/bank_accounts', {
        type: 'us_ach',
        account_holder_name: 'Payee Inc',
        currency: 'USD',
        routing_number: '110000000',
        account_number: '000123456789',
      });
      expect(destination.status).toBe(201);
    });

    it('refuses what the balance does not cover, other currencies and bad bodies, writing nothing', async () => {
      const before = await countEvents(tenant.accountId);
      const uncovered = await as('POST', '/v1/payouts', { amount: 100, currency: 'USD' });
      expect(uncovered.status).toBe(402);
      expect(uncovered.body.error).toBe('insufficient_funds');
      const jpy = await as('POST', '/v1/payouts', { amount: 100, currency: 'JPY' });
      expect(jpy.status).toBe(400);
      expect(jpy.body).toEqual({
        error: 'invalid_request',
        message: 'currency: Payouts go out in USD, EUR, GBP only, not JPY.',
      });
      const eur = await as('POST', '/v1/payouts', { amount: 100, currency: 'EUR' });
      expect(eur.body).toEqual({
        error: 'invalid_request',
        message:
          'destination: there is no default destination for EUR; add one with POST /v1/bank_accounts or name one.',
      });
      expect((await as('POST', '/v1/payouts', { amount: 100, currency: 'USD', method: 'cheque' })).status).toBe(400);
      expect((await as('POST', '/v1/payouts', { amount: -5, currency: 'USD' })).status).toBe(400);
      expect(await engine.db.orm.em.fork().count(Payout, { accountId: tenant.accountId })).toBe(0);
      expect(await countEvents(tenant.accountId)).toBe(before);
    });

    it('takes the amount off the balance at once, is paid by its workflow, records payout.created and payout.paid, and emails a confirmation', async () => {
      const credit = await call(
        'POST',
        '/v1/transactions',
        { account_id: tenant.accountId, amount: 10_000, currency: 'USD', type: 'credit' },
        await adminFor(tenant.accountId),
      );
      expect(credit.status).toBe(201);
      const created = await as('POST', '/v1/payouts', { amount: 4000, currency: 'USD', description: 'November' });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({
        object: 'payout',
        account_id: tenant.accountId,
        amount: 4000,
        currency: 'USD',
        method: 'bank_transfer',
        status: 'pending',
        description: 'November',
        livemode: true,
        paid_at: null,
      });
      expect(created.body.id).toMatch(/^po_/);
      expect(await balance()).toBe(6000);
      // More than what is left is refused.
      expect((await as('POST', '/v1/payouts', { amount: 6001, currency: 'USD' })).status).toBe(402);
      expect(await balance()).toBe(6000);

      // Pending 60 s, then in transit for a day.
      await engine.env.sleep(61_000 + day);
      expect(await engine.env.client.workflow.getHandle(created.body.id).result()).toBe('paid');
      const paid = (await as('GET', `/v1/payouts/${created.body.id}`)).body;
      expect(paid).toMatchObject({ status: 'paid', amount: 4000 });
      expect(paid.paid_at).not.toBeNull();
      expect(await balance()).toBe(6000);
      const events = await eventsAbout(created.body.id);
      expect(events.map((e) => e.body.type)).toEqual(['payout.created', 'payout.updated', 'payout.paid']);
      expect(events[0]!.body).toMatchObject({
        transaction_id: created.body.balance_transaction,
        data: { object: created.body },
      });
      expect(events[1]!.body.data.object).toMatchObject({ status: 'in_transit' });
      expect(events[2]!.body.data.object).toEqual(paid);
      expect(events[2]!.body.transaction_id).toBe(created.body.balance_transaction);

      const [mail] = await eventually(
        async () => mailTo(tenant.email),
        (m) => m.length >= 1,
      );
      expect(mail!.parsed.subject).toBe('[TEST] Payout of $40.00 paid');
      expect(mail!.parsed.text).toContain('Your payout of $40.00 by bank transfer was paid on');
      expect(mail!.parsed.text).toContain('Description: November');
      expect(mail!.parsed.text).toContain(created.body.id);

      const list = await as('GET', '/v1/payouts');
      expect(list.body).toMatchObject({ object: 'list', has_more: false });
      expect(list.body.data.map((p: { id: string }) => p.id)).toEqual([created.body.id]);
      expect((await as('GET', '/v1/payouts?status=pending')).body.data).toEqual([]);
      // Another tenant and the sandbox see none of it.
      expect((await call('GET', `/v1/payouts/${created.body.id}`)).status).toBe(404);
      expect(
        (
          await call('GET', `/v1/payouts/${created.body.id}`, undefined, {
            ...tenant.headers,
            'x-sandbox-mode': 'true',
          })
        ).status,
      ).toBe(404);
    });

    it('payout_confirmations off: paid, with its events, and no email', async () => {
      await as('PATCH', '/v1/settings/notifications', { payout_confirmations: false });
      const mailsBefore = mailTo(tenant.email).length;
      const created = await as('POST', '/v1/payouts', { amount: 1000, currency: 'USD' });
      await engine.env.sleep(61_000 + day);
      expect(await engine.env.client.workflow.getHandle(created.body.id).result()).toBe('paid');
      expect(await activityCompletions(created.body.id, 'notifyPayoutPaid')).toBe(1);
      expect(mailTo(tenant.email)).toHaveLength(mailsBefore);
      expect(await typesAbout(created.body.id)).toEqual(['payout.created', 'payout.updated', 'payout.paid']);
      expect(await balance()).toBe(5000);
    });

    it('members may not pay out', async () => {
      const member = await as('POST', '/v1/users', {
        email: `member-${Date.now()}@example.com`,
        password: 'Member!pass1',
        name: 'M',
      });
      expect(member.status).toBe(201);
      const session = await engine.login(member.body.email, 'Member!pass1');
      const refused = await call('POST', '/v1/payouts', { amount: 100, currency: 'USD' }, session.headers);
      expect(refused.status).toBe(403);
      expect((await call('GET', '/v1/payouts', undefined, session.headers)).status).toBe(200);
    });
  });

  describe('payment requests', () => {
    const pathOf = (url: string) => new URL(url).pathname;
    async function pay(url: string, method: string) {
      const page = await (await engine.app.request(pathOf(url))).text();
      const attempt = /name="attempt" value="([^"]+)"/.exec(page)?.[1] ?? '';
      const response = await engine.app.request(pathOf(url), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ payment_method: method, attempt }).toString(),
      });
      return response.status;
    }
    const create = (body: Record<string, unknown> = {}) =>
      call('POST', '/v1/payments', {
        account_id: engine.tenant.accountId,
        amount: 4250,
        currency: 'USD',
        customer_email: 'payer@example.com',
        ...body,
      });

    it('created, a declined attempt (payment.failed), then paid: the payment as a transaction and the request with its transaction_id', async () => {
      const created = await create();
      expect(created.status).toBe(201);
      expect(await pay(created.body.payment_url, 'pm_card_chargeDeclined')).toBe(402);
      expect(await pay(created.body.payment_url, 'pm_card_visa')).toBe(200);
      const paid = (await call('GET', `/v1/payments/${created.body.id}`)).body;
      expect(paid.status).toBe('succeeded');
      const events = await eventsAbout(created.body.id);
      expect(events.map((e) => e.body.type)).toEqual([
        'payment_request.created',
        'payment_request.updated',
        'payment.failed',
        'payment_request.succeeded',
      ]);
      expect(events.map((e) => e.body.transaction_id)).toEqual([null, null, null, paid.transaction_id]);
      expect(events[0]!.body.data.object).toMatchObject({
        object: 'payment_request',
        status: 'pending',
        payment_url: created.body.payment_url,
      });
      expect(events[2]!.body.data.object).toMatchObject({ attempts: 1, last_payment_error: { code: 'card_declined' } });
      expect(events[3]!.body.data.object).toEqual(paid);
      expect(await typesAbout(paid.transaction_id)).toEqual([
        'transaction.created',
        'transaction.succeeded',
        'payment.succeeded',
      ]);
    });

    it('canceled and expired requests record payment_request.canceled and payment_request.failed', async () => {
      const canceled = await create();
      expect((await call('POST', `/v1/payments/${canceled.body.id}/cancel`)).status).toBe(200);
      const expiring = await create({ expires_in: 3600 });
      await engine.env.sleep(61 * minute);
      await eventually(
        async () => (await call('GET', `/v1/payments/${expiring.body.id}`)).body,
        (r) => r.status === 'failed',
      );
      expect(await typesAbout(canceled.body.id)).toEqual(['payment_request.created', 'payment_request.canceled']);
      expect(await typesAbout(expiring.body.id)).toEqual(['payment_request.created', 'payment_request.failed']);
    });
  });

  describe('the events API', () => {
    let tenant: Tenant;
    const as = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
      call(method, path, body, { ...tenant.headers, ...headers });

    beforeAll(async () => {
      tenant = await engine.signUp({ name: 'Lister' });
      tenantsById.set(tenant.accountId, tenant);
      for (const n of [1, 2, 3]) {
        const customer = await as('POST', '/v1/customers', { email: `c${n}@example.com` });
        await as('PATCH', `/v1/customers/${customer.body.id}`, { name: `Customer ${n}` });
      }
      await call(
        'POST',
        '/v1/transactions',
        { account_id: tenant.accountId, amount: 100, currency: 'USD', type: 'credit' },
        await adminFor(tenant.accountId),
      );
      await as('POST', '/v1/customers', { email: 'sandbox@example.com' }, { 'x-sandbox-mode': 'true' });
    });

    it('lists newest first, with every payload carrying transaction_id', async () => {
      const all = await as('GET', '/v1/events?limit=100');
      expect(all.status).toBe(200);
      expect(all.body.has_more).toBe(false);
      expect(all.body.data.map((e: { type: string }) => e.type)).toEqual([
        'transaction.succeeded',
        'transaction.created',
        'customer.updated',
        'customer.created',
        'customer.updated',
        'customer.created',
        'customer.updated',
        'customer.created',
        'account.created',
      ]);
      for (const event of all.body.data) expect(event).toHaveProperty('transaction_id');
      expect(all.body.data.filter((e: { transaction_id: string | null }) => e.transaction_id === null)).toHaveLength(7);
      expect(all.body.data[2].data.object).toMatchObject({ object: 'customer', name: 'Customer 3' });
    });

    it('filters by type and by family', async () => {
      const created = await as('GET', '/v1/events?type=customer.created');
      expect(created.body.data).toHaveLength(3);
      const family = await as('GET', '/v1/events?type=transaction.*');
      expect(family.body.data.map((e: { type: string }) => e.type)).toEqual([
        'transaction.succeeded',
        'transaction.created',
      ]);
      expect((await as('GET', '/v1/events?type=payout.*')).body.data).toEqual([]);
      for (const bad of ['nonsense', 'customer.', 'customer.*x', 'bogus.*']) {
        const refused = await as('GET', `/v1/events?type=${encodeURIComponent(bad)}`);
        expect(refused.status, bad).toBe(400);
        expect(refused.body.error).toBe('invalid_request');
      }
    });

    it('pages with starting_after and ending_before', async () => {
      const all = (await as('GET', '/v1/events?limit=100')).body.data.map((e: { id: string }) => e.id);
      const first = await as('GET', '/v1/events?limit=3');
      expect(first.body).toMatchObject({ has_more: true });
      expect(first.body.data.map((e: { id: string }) => e.id)).toEqual(all.slice(0, 3));
      const second = await as('GET', `/v1/events?limit=3&starting_after=${all[2]}`);
      expect(second.body.data.map((e: { id: string }) => e.id)).toEqual(all.slice(3, 6));
      const last = await as('GET', `/v1/events?limit=3&starting_after=${all[5]}`);
      expect(last.body).toMatchObject({ has_more: false });
      expect(last.body.data.map((e: { id: string }) => e.id)).toEqual(all.slice(6));
      const back = await as('GET', `/v1/events?limit=3&ending_before=${all[6]}`);
      expect(back.body.data.map((e: { id: string }) => e.id)).toEqual(all.slice(3, 6));
      expect((await as('GET', `/v1/events?starting_after=${all[0]}&ending_before=${all[1]}`)).status).toBe(400);
      expect((await as('GET', '/v1/events?limit=101')).status).toBe(400);
      expect((await as('GET', '/v1/events?starting_after=cus_123')).status).toBe(400);
    });

    it('keeps tenants and modes apart', async () => {
      const mine = (await as('GET', '/v1/events?limit=1')).body.data[0];
      expect((await as('GET', `/v1/events/${mine.id}`)).body).toEqual(mine);
      expect((await call('GET', `/v1/events/${mine.id}`)).status).toBe(404);
      expect((await as('GET', `/v1/events/${mine.id}`, undefined, { 'x-sandbox-mode': 'true' })).status).toBe(404);
      expect((await as('GET', '/v1/events/evt_00000000000000000000000000')).status).toBe(404);
      const sandbox = await as('GET', '/v1/events', undefined, { 'x-sandbox-mode': 'true' });
      expect(sandbox.body.data.map((e: { type: string; livemode: boolean }) => [e.type, e.livemode])).toEqual([
        ['customer.created', false],
        ['account.created', false],
      ]);
      expect((await call('GET', '/v1/events', undefined, { authorization: '' })).status).toBe(401);
    });

    it('sign-up, PATCH /v1/account and DELETE /v1/account record account.created, .updated and .closed in both modes', async () => {
      const closing = await engine.signUp({ name: 'Closing Ltd' });
      tenantsById.set(closing.accountId, closing);
      expect((await call('PATCH', '/v1/account', { name: 'Closing Limited' }, closing.headers)).status).toBe(200);
      expect((await call('DELETE', '/v1/account', undefined, closing.headers)).status).toBe(200);
      const rows = await engine.db.orm.em
        .fork()
        .find(Event, { accountId: closing.accountId }, { orderBy: { id: 'asc' } });
      expect(rows.map((r) => [r.type, r.livemode])).toEqual([
        ['account.created', true],
        ['account.created', false],
        ['account.updated', true],
        ['account.updated', false],
        ['account.closed', true],
        ['account.closed', false],
      ]);
      expect(rows[0]!.data.object).toMatchObject({ id: closing.accountId, name: 'Closing Ltd', status: 'active' });
      expect(rows[2]!.data.object).toMatchObject({ id: closing.accountId, name: 'Closing Limited', status: 'active' });
      expect(rows[4]!.data.object).toMatchObject({ status: 'closed', closed_at: expect.any(String) });
    });

    it('publishes the catalog in the OpenAPI document', async () => {
      const doc = (await call('GET', '/openapi.json')).body;
      const listed = doc.components.schemas.Event.properties.type.enum as string[];
      expect(listed).toEqual([...eventTypes]);
      for (const name of [
        'payout.created',
        'payment.failed',
        'transaction.created',
        'subscription.past_due',
        'invoice.paid',
        'payment_request.succeeded',
      ]) {
        expect(listed).toContain(name);
      }
      expect(doc.paths['/v1/events'].get.description).toContain('`payout.created`');
    });
  });

  it('renders the webhook endpoint disabled email (for the webhooks delivery code)', () => {
    const email = webhookEndpointDisabledEmail({
      accountName: 'Acme',
      endpointId: 'we_123',
      url: 'https://hooks.example.com/billing',
      failingSince: new Date('2026-03-01T10:00:00Z'),
      disabledAt: new Date('2026-03-04T10:00:00Z'),
      lastError: 'HTTP 503',
      livemode: true,
    });
    expect(email.subject).toBe('Webhook endpoint disabled: https://hooks.example.com/billing');
    expect(email.text).toContain(
      'Your live webhook endpoint https://hooks.example.com/billing (we_123) has failed every delivery since March 1, 2026',
    );
    expect(email.text).toContain('disabled on March 4, 2026');
    expect(email.text).toContain('Last error: HTTP 503');
    expect(email.text).toContain('PATCH /v1/webhooks/we_123 {"enabled": true}');
    expect(email.html).toContain('https://hooks.example.com/billing');
  });
});
