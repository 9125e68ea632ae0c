/**
 * `billing trigger <event>`: sandbox objects made through the public API so that the engine
 * records the real event (no event is forged). Each recipe makes the objects one flow needs and
 * names every event type that flow records; `trigger <event>` runs the recipe that records it.
 * The engine's catalog (domain/events.ts) has more types than these: the ones that need time to
 * pass (renewals, dunning, payouts arriving), another party (a dispute, a sign-up) or the account's
 * settings are listed in docs/cli.md#trigger as not triggered.
 */
import { CliError, exitCodes } from './exit-codes.ts';

/** One API call in the sandbox, as the caller's CLI key. */
export type Call = (method: string, path: string, body?: unknown) => Promise<any>;

export interface Recipe {
  /** The event types the flow records, in the order it records them. */
  events: readonly string[];
  /** A subscription's first invoice is paid by the engine's worker: the recipe waits for it. */
  needsWorker?: boolean;
  /** `accountId`: the CLI key's account (a payment names the account it is for). */
  run(call: Call, stamp: string, accountId: string): Promise<Record<string, string>>;
}

const customer = (call: Call, stamp: string, paymentMethod?: string) =>
  call('POST', '/v1/customers', { email: `trigger-${stamp}@example.com`, name: 'Triggered customer', ...(paymentMethod ? { payment_method: paymentMethod } : {}) });
const coupon = (call: Call, stamp: string, suffix = '') => call('POST', '/v1/coupons', { id: `TRIGGER_${stamp}${suffix}`.toUpperCase(), name: 'Triggered coupon', percent_off: 10, duration: 'once' });
const payment = (call: Call, accountId: string, paymentMethod: string, amount = 2000) =>
  call('POST', '/v1/transactions', { account_id: accountId, amount, currency: 'USD', type: 'payment', payment_method: paymentMethod, reference: `billing trigger ${paymentMethod}` });

/** A declined payment: the failed transaction, or (when the API answers 402) the id its error names, if any. */
async function declined(call: Call, accountId: string): Promise<string> {
  try {
    return (await payment(call, accountId, 'pm_card_chargeDeclined')).id;
  } catch (error) {
    if (!(error instanceof CliError) || error.exitCode !== exitCodes.refused) throw error;
    const body = error.body as { transaction_id?: string; transaction?: { id?: string } } | undefined;
    return body?.transaction_id ?? body?.transaction?.id ?? '';
  }
}

export const recipes: readonly Recipe[] = [
  {
    events: ['customer.created', 'customer.updated'],
    async run(call, stamp) {
      const c = await customer(call, stamp);
      await call('PATCH', `/v1/customers/${c.id}`, { name: 'Triggered customer (renamed)' });
      return { customer: c.id };
    },
  },
  {
    events: ['transaction.created', 'transaction.succeeded', 'payment.succeeded', 'transaction.updated', 'payment.refunded'],
    async run(call, _stamp, accountId) {
      const paid = await payment(call, accountId, 'pm_card_visa');
      await call('PATCH', `/v1/transactions/${paid.id}`, { reference: 'billing trigger (updated)' });
      const refund = await call('POST', '/v1/transactions', { account_id: accountId, amount: 500, currency: 'USD', type: 'refund', source_transaction: paid.id });
      return { transaction: paid.id, refund: refund.id };
    },
  },
  {
    events: ['transaction.failed', 'payment.failed'],
    async run(call, _stamp, accountId) {
      return { transaction: await declined(call, accountId) };
    },
  },
  {
    events: ['coupon.created', 'coupon.updated', 'coupon.deleted'],
    async run(call, stamp) {
      const made = await coupon(call, stamp);
      await call('PATCH', `/v1/coupons/${made.id}`, { name: 'Triggered coupon (renamed)' });
      await call('DELETE', `/v1/coupons/${made.id}`);
      return { coupon: made.id };
    },
  },
  {
    events: ['promotion_code.created', 'promotion_code.updated'],
    async run(call, stamp) {
      const made = await coupon(call, stamp);
      const code = await call('POST', '/v1/promotion_codes', { coupon: made.id, code: `TRIG${stamp}`.toUpperCase() });
      await call('PATCH', `/v1/promotion_codes/${code.id}`, { active: false });
      return { coupon: made.id, promotion_code: code.id };
    },
  },
  {
    events: ['customer.discount.created', 'customer.discount.updated', 'customer.discount.deleted'],
    async run(call, stamp) {
      const c = await customer(call, stamp);
      const first = await coupon(call, stamp, 'A');
      const second = await coupon(call, stamp, 'B');
      await call('POST', `/v1/customers/${c.id}/discount`, { coupon: first.id });
      await call('POST', `/v1/customers/${c.id}/discount`, { coupon: second.id });
      await call('DELETE', `/v1/customers/${c.id}/discount`);
      return { customer: c.id, coupon: second.id };
    },
  },
  {
    events: ['tax_rate.created', 'tax_rate.updated'],
    async run(call) {
      const rate = await call('POST', '/v1/tax_rates', { display_name: 'Triggered tax', percentage: 10, inclusive: false });
      await call('PATCH', `/v1/tax_rates/${rate.id}`, { active: false });
      return { tax_rate: rate.id };
    },
  },
  {
    events: ['customer.tax_id.created', 'customer.tax_id.deleted'],
    async run(call, stamp) {
      const c = await customer(call, stamp);
      const taxId = await call('POST', `/v1/customers/${c.id}/tax_ids`, { type: 'eu_vat', value: 'DE136695976' });
      await call('DELETE', `/v1/customers/${c.id}/tax_ids/${taxId.id}`);
      return { customer: c.id, tax_id: taxId.id };
    },
  },
  {
    events: ['customer_balance_transaction.created'],
    async run(call, stamp) {
      const c = await customer(call, stamp);
      const txn = await call('POST', `/v1/customers/${c.id}/balance_transactions`, { amount: -500, currency: 'USD', description: 'billing trigger credit' });
      return { customer: c.id, balance_transaction: txn.id };
    },
  },
  {
    events: ['invoiceitem.created', 'invoiceitem.updated', 'invoiceitem.deleted'],
    async run(call, stamp) {
      const c = await customer(call, stamp);
      const item = await call('POST', '/v1/invoice_items', { customer: c.id, amount: 1500, currency: 'USD', description: 'billing trigger item' });
      await call('PATCH', `/v1/invoice_items/${item.id}`, { quantity: 2 });
      await call('DELETE', `/v1/invoice_items/${item.id}`);
      return { customer: c.id, invoice_item: item.id };
    },
  },
  {
    events: ['test_clock.created', 'test_clock.deleted'],
    // A clock's deletion is carried out by the engine's clock worker.
    needsWorker: true,
    async run(call, stamp) {
      const clock = await call('POST', '/v1/test_clocks', { frozen_time: new Date(Date.UTC(2030, 0, 1)).toISOString(), name: `billing trigger ${stamp}` });
      await call('DELETE', `/v1/test_clocks/${clock.id}`);
      return { test_clock: clock.id };
    },
  },
  {
    events: ['subscription.created', 'invoice.created', 'invoice.paid'],
    needsWorker: true,
    async run(call, stamp) {
      const c = await customer(call, stamp, 'pm_card_visa');
      const plan = await call('POST', '/v1/plans', { name: `Triggered plan ${stamp}`, amount: 1500, currency: 'USD', interval: 'month' });
      const sub = await call('POST', '/v1/subscriptions', { customer: c.id, plan: plan.id, trial_period_days: 0 });
      return { customer: c.id, plan: plan.id, subscription: sub.id, ...(sub.latest_invoice ? { invoice: sub.latest_invoice } : {}) };
    },
  },
  {
    events: ['subscription.plan_changed', 'subscription.updated', 'subscription.paused', 'subscription.resumed', 'subscription.canceled'],
    needsWorker: true,
    async run(call, stamp) {
      const c = await customer(call, stamp, 'pm_card_visa');
      const plan = await call('POST', '/v1/plans', { name: `Triggered plan ${stamp}`, amount: 1500, currency: 'USD', interval: 'month' });
      const bigger = await call('POST', '/v1/plans', { name: `Triggered plan ${stamp} (more)`, amount: 3000, currency: 'USD', interval: 'month' });
      const sub = await call('POST', '/v1/subscriptions', { customer: c.id, plan: plan.id, trial_period_days: 0 });
      // An upgrade (charged now, prorated), a cancel at period end taken back, a pause and a resume, then the end.
      await call('POST', `/v1/subscriptions/${sub.id}/update`, { plan: bigger.id });
      await call('POST', `/v1/subscriptions/${sub.id}/cancel`, { at_period_end: true });
      await call('POST', `/v1/subscriptions/${sub.id}/undo_cancel`, {});
      await call('POST', `/v1/subscriptions/${sub.id}/pause`, {});
      await call('POST', `/v1/subscriptions/${sub.id}/resume`, {});
      await call('POST', `/v1/subscriptions/${sub.id}/cancel`, {});
      return { customer: c.id, plan: bigger.id, subscription: sub.id };
    },
  },
];

/** Every event type some recipe records. */
export const triggerableEvents: readonly string[] = recipes.flatMap((recipe) => recipe.events);

export const recipeFor = (event: string): Recipe | undefined => recipes.find((recipe) => recipe.events.includes(event));
