/**
 * The customer's balance on invoices (issue #27, and #26's downgrade credit), in skipped time
 * through the real API, workflows, PostgreSQL and the sandbox processor: a credit pays a
 * renewal in full (no charge at all); a downgrade's proration credit larger than the next
 * invoice is carried to the balance and pays the renewal after; a voided invoice gives back
 * the balance it used; the upcoming invoice shows the balance it will apply; two invoices at
 * once never spend one credit twice.
 */
import { extractText, getDocumentProxy } from 'unpdf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Charge, CustomerBalanceTransaction, Invoice } from '../db/entities/index.ts';
import { recordBalanceTransaction } from '../services/customers/balance.ts';
import { issueWithAdjustments } from '../services/invoices/adjustments.ts';
import { startTestEngine, type TestEngine } from './helpers/engine.ts';
import { expectLedgerInvariants } from './helpers/ledger.ts';
import { eventually } from './helpers/temporal.ts';

const day = 86_400_000;

describe('the customer balance on invoices', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine();
  });
  afterAll(() => engine?.close());
  const em = () => engine.db.orm.em.fork();

  async function customerWithCredit(email: string, credit: number) {
    const customer = await engine.call('POST', '/v1/customers', { email, payment_method: 'pm_card_visa' });
    expect(customer.status).toBe(201);
    if (credit !== 0) {
      const adjusted = await engine.call('POST', `/v1/customers/${customer.body.id}/balance_transactions`, {
        amount: -credit,
        currency: 'USD',
        description: 'Goodwill',
      });
      expect(adjusted.status, JSON.stringify(adjusted.body)).toBe(201);
    }
    return customer.body.id as string;
  }
  const balanceOf = async (customerId: string) =>
    (await engine.call('GET', `/v1/customers/${customerId}`)).body.balances?.USD ?? 0;

  it(
    'a credit pays the first invoice and a renewal in full: no charge, and the rest of the credit stays',
    { timeout: 60_000 },
    async () => {
      const customerId = await customerWithCredit('credit-full@example.com', 5000);
      const plan = await engine.call('POST', '/v1/plans', {
        name: 'Basic',
        amount: 2000,
        currency: 'USD',
        interval: 'month',
      });
      const sub = await engine.call('POST', '/v1/subscriptions', {
        customer_id: customerId,
        plan: plan.body.id,
        trial_period_days: 0,
      });
      expect(sub.status, JSON.stringify(sub.body)).toBe(201);
      const first = (await engine.call('GET', `/v1/invoices/${sub.body.latest_invoice}`)).body;
      expect(first).toMatchObject({
        status: 'paid',
        total: 2000,
        starting_balance: -5000,
        ending_balance: -3000,
        amount_due: 0,
        amount_paid: 0,
        transaction: null,
      });
      expect(await balanceOf(customerId)).toBe(-3000);

      // The upcoming invoice shows the credit it will use.
      const upcoming = await engine.call('GET', `/v1/invoices/upcoming?subscription=${sub.body.id}`);
      expect(upcoming.status).toBe(200);
      expect(upcoming.body).toMatchObject({
        total: 2000,
        starting_balance: -3000,
        ending_balance: -1000,
        amount_due: 0,
      });

      await engine.env.sleep(31 * day);
      const invoices = await engine.invoices(sub.body.id);
      expect(invoices).toHaveLength(2);
      const renewal = (await engine.call('GET', `/v1/invoices/${invoices[1]!.id}`)).body;
      expect(renewal).toMatchObject({
        status: 'paid',
        total: 2000,
        starting_balance: -3000,
        ending_balance: -1000,
        amount_due: 0,
        transaction: null,
      });
      // Nothing went to the processor for either invoice.
      expect(await em().count(Charge, { customerId })).toBe(0);
      expect(await balanceOf(customerId)).toBe(-1000);
      const movements = (await engine.call('GET', `/v1/customers/${customerId}/balance_transactions`)).body.data;
      expect(
        movements.map((m: { type: string; amount: number; ending_balance: number }) => [
          m.type,
          m.amount,
          m.ending_balance,
        ]),
      ).toEqual([
        ['applied_to_invoice', 2000, -1000],
        ['applied_to_invoice', 2000, -3000],
        ['adjustment', -5000, -5000],
      ]);

      // The third renewal uses the last 1000 and charges the card 1000.
      await engine.env.sleep(31 * day);
      const third = (await engine.call('GET', `/v1/invoices/${(await engine.invoices(sub.body.id))[2]!.id}`)).body;
      expect(third).toMatchObject({
        status: 'paid',
        total: 2000,
        starting_balance: -1000,
        ending_balance: 0,
        amount_due: 1000,
        amount_paid: 1000,
      });
      expect(await balanceOf(customerId)).toBe(0);
      expect(await em().count(Charge, { customerId, status: 'succeeded' })).toBe(1);
      await expectLedgerInvariants(em(), engine.tenant.accountId);
    },
  );

  it(
    "a downgrade's proration credit larger than the next invoice is carried to the balance and pays the renewal after",
    { timeout: 60_000 },
    async () => {
      const customerId = await customerWithCredit('downgrade-credit@example.com', 0);
      const seats = await engine.call('POST', '/v1/plans', {
        name: 'Seats',
        amount: 1000,
        currency: 'USD',
        interval: 'month',
      });
      const sub = await engine.call('POST', '/v1/subscriptions', {
        customer_id: customerId,
        items: [{ plan: seats.body.id, quantity: 10 }],
        trial_period_days: 0,
      });
      expect(sub.status, JSON.stringify(sub.body)).toBe(201);
      const item = (await engine.call('GET', `/v1/subscriptions/${sub.body.id}`)).body.items[0];
      await engine.env.sleep(day);
      // 10 seats down to 1, prorated onto the next invoice: a credit of about 9 × 1000 × 30/31 against a renewal of 1000.
      const changed = await engine.call('PATCH', `/v1/subscription_items/${item.id}`, {
        quantity: 1,
        proration_behavior: 'create_prorations',
      });
      expect(changed.status, JSON.stringify(changed.body)).toBe(200);
      await engine.env.sleep(31 * day);
      const invoices = await engine.invoices(sub.body.id);
      expect(invoices).toHaveLength(2);
      const renewal = (await engine.call('GET', `/v1/invoices/${invoices[1]!.id}`)).body;
      const credit = renewal.lines
        .filter((l: { amount: number }) => l.amount < 0)
        .reduce((s: number, l: { amount: number }) => s + l.amount, 0);
      expect(credit).toBeLessThan(-8000);
      expect(renewal.total).toBe(renewal.subtotal);
      expect(renewal.total).toBeLessThan(0);
      expect(renewal).toMatchObject({
        status: 'paid',
        amount_due: 0,
        starting_balance: 0,
        ending_balance: renewal.total,
      });
      expect(await balanceOf(customerId)).toBe(renewal.total);

      // The renewal after (1 seat, 1000) is paid from that credit, without a charge.
      await engine.env.sleep(31 * day);
      const next = (await engine.call('GET', `/v1/invoices/${(await engine.invoices(sub.body.id))[2]!.id}`)).body;
      expect(next).toMatchObject({
        status: 'paid',
        total: 1000,
        starting_balance: renewal.total,
        ending_balance: renewal.total + 1000,
        amount_due: 0,
      });
      // One charge in all: the first invoice's ten seats.
      expect(await em().count(Charge, { customerId })).toBe(1);
    },
  );

  it('a voided invoice gives back the credit it used', { timeout: 60_000 }, async () => {
    const customerId = await customerWithCredit('void-credit@example.com', 1500);
    const item = await engine.call('POST', '/v1/invoice_items', {
      customer: customerId,
      amount: 4000,
      currency: 'USD',
      description: 'Consulting',
    });
    expect(item.status, JSON.stringify(item.body)).toBe(201);
    const draft = await engine.call('POST', '/v1/invoices', {
      customer: customerId,
      collection_method: 'send_invoice',
      days_until_due: 14,
      pending_invoice_items_behavior: 'include',
    });
    expect(draft.status, JSON.stringify(draft.body)).toBe(201);
    const finalized = await engine.call('POST', `/v1/invoices/${draft.body.id}/finalize`);
    expect(finalized.status, JSON.stringify(finalized.body)).toBe(200);
    expect(finalized.body).toMatchObject({
      status: 'open',
      total: 4000,
      starting_balance: -1500,
      ending_balance: 0,
      amount_due: 2500,
    });
    expect(await balanceOf(customerId)).toBe(0);
    const voided = await engine.call('POST', `/v1/invoices/${draft.body.id}/void`);
    expect(voided.status, JSON.stringify(voided.body)).toBe(200);
    expect(await balanceOf(customerId)).toBe(-1500);
    const rows = await em().find(CustomerBalanceTransaction, { invoiceId: draft.body.id }, { orderBy: { id: 'asc' } });
    expect(rows.map((r) => [r.type, Number(r.amount)])).toEqual([
      ['applied_to_invoice', 1500],
      ['unapplied_from_invoice', -1500],
    ]);
    // Voiding again changes nothing.
    expect((await engine.call('POST', `/v1/invoices/${draft.body.id}/void`)).status).toBe(409);
    expect(await balanceOf(customerId)).toBe(-1500);
  });

  it(
    'a discounted, taxed invoice adds up on the API, the PDF and the email alike, and search finds it by discount and tax',
    { timeout: 60_000 },
    async () => {
      const customerId = await customerWithCredit('adds-up@example.com', 0);
      const coupon = await engine.call('POST', '/v1/coupons', { name: 'Launch', percent_off: 20, duration: 'forever' });
      expect(coupon.status, JSON.stringify(coupon.body)).toBe(201);
      const vat = await engine.call('POST', '/v1/tax_rates', {
        display_name: 'VAT',
        percentage: 19,
        inclusive: false,
        country: 'DE',
      });
      expect(vat.status, JSON.stringify(vat.body)).toBe(201);
      const seats = await engine.call('POST', '/v1/plans', {
        name: 'Seats',
        amount: 1500,
        currency: 'USD',
        interval: 'month',
      });
      const reportedBefore = await invoicedUsd();
      const sub = await engine.call('POST', '/v1/subscriptions', {
        customer_id: customerId,
        items: [{ plan: seats.body.id, quantity: 12, tax_rates: [vat.body.id] }],
        coupon: coupon.body.id,
        trial_period_days: 0,
      });
      expect(sub.status, JSON.stringify(sub.body)).toBe(201);
      const invoice = (await engine.call('GET', `/v1/invoices/${sub.body.latest_invoice}`)).body;
      // docs/discounts-and-taxes.md's first worked example.
      expect(invoice).toMatchObject({
        subtotal: 18000,
        total_excluding_tax: 14400,
        tax: 2736,
        total: 17136,
        amount_due: 17136,
        amount_paid: 17136,
        status: 'paid',
      });
      expect(invoice.total_discount_amounts).toEqual([{ discount: expect.stringMatching(/^di_/), amount: 3600 }]);
      expect(invoice.total_tax_amounts).toEqual([
        {
          tax_rate: vat.body.id,
          display_name: 'VAT',
          percentage: '19',
          inclusive: false,
          taxable_amount: 14400,
          amount: 2736,
        },
      ]);
      expect(invoice.lines[0]).toMatchObject({
        amount: 18000,
        discount_amounts: [{ amount: 3600 }],
        tax_amounts: [{ amount: 2736 }],
      });
      // The PDF prints the same rows (its text layer).
      const pdf = await engine.app.request(invoice.pdf.replace(/^https?:\/\/[^/]+/, ''));
      expect(pdf.status).toBe(200);
      const { text: pages } = await extractText(await getDocumentProxy(new Uint8Array(await pdf.arrayBuffer())), {
        mergePages: true,
      });
      const printed = pages.replace(/\s+/g, ' ');
      for (const row of ['Launch -$36.00', 'Total excluding tax $144.00', 'VAT 19% $27.36', 'Total $171.36'])
        expect(printed).toContain(row);
      // The receipt says them too.
      const receipt = await eventually(
        async () =>
          engine.mail.messages.find((m) => m.parsed.subject?.includes(`Receipt for invoice ${invoice.number}`)),
        (m) => m !== undefined,
        15_000,
      );
      const text = receipt!.parsed.text ?? '';
      expect(text).toContain('Launch: -$36.00');
      expect(text).toContain('Total excluding tax: $144.00');
      expect(text).toContain('VAT 19%: $27.36');
      expect(text).toContain('Total: $171.36');
      const found = await engine.call(
        'GET',
        `/v1/invoices/search?query=${encodeURIComponent('discount>0 AND tax>=2736')}`,
      );
      expect(found.status, JSON.stringify(found.body)).toBe(200);
      expect(found.body.data.map((i: { id: string }) => i.id)).toEqual([invoice.id]);
      // The invoiced report: revenue net of the discount, and the tax collected per rate.
      const reported = await invoicedUsd();
      expect({
        subtotal: reported.subtotal - reportedBefore.subtotal,
        discounts: reported.discounts - reportedBefore.discounts,
        tax: reported.tax - reportedBefore.tax,
        net: reported.net_revenue - reportedBefore.net_revenue,
      }).toEqual({ subtotal: 18000, discounts: 3600, tax: 2736, net: 14400 });
      expect(reported.tax_by_rate.filter((r) => r.tax_rate === vat.body.id)).toEqual([
        { tax_rate: vat.body.id, display_name: 'VAT', percentage: '19', inclusive: false, amount: 2736 },
      ]);
    },
  );

  /** GET /v1/reports/invoiced in USD, summed over every month from 2024 on (the file skips time ahead). */
  async function invoicedUsd() {
    const answer = await engine.call(
      'GET',
      '/v1/reports/invoiced?interval=month&from=2024-01-01T00:00:00Z&to=2033-12-01T00:00:00Z',
    );
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    type Point = {
      subtotal: number;
      discounts: number;
      tax: number;
      net_revenue: number;
      tax_by_rate: { tax_rate: string; amount: number }[];
    };
    const points: Point[] =
      answer.body.data.find((series: { currency: string }) => series.currency === 'USD')?.points ?? [];
    const byRate = new Map<string, any>();
    for (const r of points.flatMap((p) => p.tax_by_rate))
      byRate.set(r.tax_rate, { ...r, amount: (byRate.get(r.tax_rate)?.amount ?? 0) + r.amount });
    const sum = (key: 'subtotal' | 'discounts' | 'tax' | 'net_revenue') =>
      points.reduce((total, p) => total + p[key], 0);
    return {
      subtotal: sum('subtotal'),
      discounts: sum('discounts'),
      tax: sum('tax'),
      net_revenue: sum('net_revenue'),
      tax_by_rate: [...byRate.values()] as { tax_rate: string }[],
    };
  }

  it(
    "an invoice item's own tax rates tax its line on a one-off invoice; an item without them takes the defaults (none here)",
    { timeout: 60_000 },
    async () => {
      const customerId = await customerWithCredit('item-tax@example.com', 0);
      const gst = await engine.call('POST', '/v1/tax_rates', {
        display_name: 'GST',
        percentage: 10,
        inclusive: true,
        country: 'AU',
      });
      expect(gst.status, JSON.stringify(gst.body)).toBe(201);
      const taxed = await engine.call('POST', '/v1/invoice_items', {
        customer: customerId,
        amount: 11000,
        currency: 'USD',
        description: 'Workshop',
        tax_rates: [gst.body.id],
      });
      const untaxed = await engine.call('POST', '/v1/invoice_items', {
        customer: customerId,
        amount: 500,
        currency: 'USD',
        description: 'Shipping',
      });
      expect([taxed.status, untaxed.status]).toEqual([201, 201]);
      const draft = await engine.call('POST', '/v1/invoices', {
        customer: customerId,
        collection_method: 'send_invoice',
        days_until_due: 7,
      });
      const finalized = await engine.call('POST', `/v1/invoices/${draft.body.id}/finalize`);
      expect(finalized.status, JSON.stringify(finalized.body)).toBe(200);
      expect(finalized.body).toMatchObject({
        subtotal: 11500,
        total_excluding_tax: 10500,
        tax: 1000,
        total: 11500,
        amount_due: 11500,
      });
      expect(
        finalized.body.lines.map((l: { tax_amounts: { amount: number }[] }) => l.tax_amounts.map((t) => t.amount)),
      ).toEqual([[1000], []]);
    },
  );

  it(
    'two invoices issued at once never spend one credit twice (the balance row decides)',
    { timeout: 60_000 },
    async () => {
      const customer = await engine.call('POST', '/v1/customers', { email: 'race-credit@example.com' });
      const customerId = customer.body.id as string;
      await engine.db.orm.em.fork().transactional((tx) =>
        recordBalanceTransaction(tx, {
          accountId: engine.tenant.accountId,
          livemode: true,
          customerId,
          currency: 'USD',
          type: 'adjustment',
          amount: -3000,
        }),
      );
      // Eight invoices of 1000 each issued at the same moment, each in its own transaction.
      const ids = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          engine.db.orm.em.fork().transactional(async (tx) => {
            const invoice = tx.create(Invoice, {
              id: `inv_race${i}`,
              number: `inv_race${i}`,
              billingKey: `race:${customerId}:${i}`,
              subscriptionId: null,
              accountId: engine.tenant.accountId,
              customerId,
              customerEmail: null,
              customerName: null,
              status: 'open',
              currency: 'USD',
              subtotal: 1000,
              total: 1000,
              amountDue: 1000,
              amountPaid: 0,
              attemptCount: 0,
              lines: [
                {
                  description: 'Thing',
                  amount: 1000,
                  quantity: 1,
                  period_start: new Date().toISOString(),
                  period_end: new Date().toISOString(),
                },
              ],
              periodStart: new Date(),
              periodEnd: new Date(),
              chargeId: null,
              transactionId: null,
              amountRefunded: 0,
              livemode: true,
              createdAt: new Date(),
              paidAt: null,
              voidedAt: null,
              markedUncollectibleAt: null,
            });
            await tx.flush();
            await issueWithAdjustments(tx, invoice, new Date());
            return invoice.id;
          }),
        ),
      );
      const invoices = await em().find(Invoice, { id: { $in: ids } });
      const fromBalance = invoices.reduce(
        (sum, inv) => sum + (Number(inv.endingBalance) - Number(inv.startingBalance)),
        0,
      );
      expect(fromBalance).toBe(3000);
      expect(invoices.filter((inv) => Number(inv.amountDue) === 0)).toHaveLength(3);
      expect(invoices.reduce((sum, inv) => sum + Number(inv.amountDue), 0)).toBe(5000);
      expect(await balanceOf(customerId)).toBe(0);
      const sum = (await em().find(CustomerBalanceTransaction, { customerId })).reduce(
        (s, r) => s + Number(r.amount),
        0,
      );
      expect(sum).toBe(0);
    },
  );
});
