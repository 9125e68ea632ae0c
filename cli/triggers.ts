/**
 * `billing trigger <event>`: sandbox objects made through the public API so that the engine
 * records the real event (no event is forged). Each recipe makes the objects one flow needs and
 * names every event type that flow records; `trigger <event>` runs the recipe that records it.
 * Time that has to pass (a trial ending, a link expiring, a payout arriving) passes on a test clock;
 * what the customer does (paying on the pay page) the CLI does as the customer's browser would.
 * Every catalog type (domain/events.ts) has a recipe: `notTriggered` below stays empty. Faults come
 * from the sandbox test helpers (POST /v1/test_helpers/..., api/routes/test-helpers.ts), which send an
 * export or a clock down the engine's real failure path; the account events from a throwaway account
 * signed up (and closed) for the purpose, in which they are recorded. Recipes marked `needsWorker`
 * wait on a workflow (an invoice's, a payment request's, a clock's, an export's): they need the
 * engine's worker running.
 */
import { CliError, exitCodes } from './exit-codes.ts';

/** One API call in the sandbox, as the caller's CLI key. */
export type Call = (method: string, path: string, body?: unknown) => Promise<any>;

/** A form posted to one of the engine's pages (a pay page, as the customer's browser posts it): its status. */
export type PostForm = (path: string, form: Record<string, string>) => Promise<number>;

/** API calls with another credential: a user's access token, in the sandbox; `null`, none (sign-up, login). */
export type CallAs = (accessToken: string | null) => Call;

export interface Recipe {
  /** The event types the flow records, in the order it records them. */
  events: readonly string[];
  /** A subscription's first invoice is paid by the engine's worker: the recipe waits for it. */
  needsWorker?: boolean;
  /** Where the events are, said after the objects made, when not in the CLI key's sandbox. */
  note?: string;
  /**
   * `accountId`: the CLI key's account (a payment names the account it is for); `postForm`: a page's form, as a
   * browser sends it; `callAs`: calls as another account's user (the throwaway account of the account events).
   */
  run(
    call: Call,
    stamp: string,
    accountId: string,
    postForm: PostForm,
    callAs: CallAs,
  ): Promise<Record<string, string>>;
}

const customer = (call: Call, stamp: string, paymentMethod?: string) =>
  call('POST', '/v1/customers', {
    email: `trigger-${stamp}@example.com`,
    name: 'Triggered customer',
    ...(paymentMethod ? { payment_method: paymentMethod } : {}),
  });
const coupon = (call: Call, stamp: string, suffix = '') =>
  call('POST', '/v1/coupons', {
    id: `TRIGGER_${stamp}${suffix}`.toUpperCase(),
    name: 'Triggered coupon',
    percent_off: 10,
    duration: 'once',
  });
const payment = (call: Call, accountId: string, paymentMethod: string, amount = 2000) =>
  call('POST', '/v1/transactions', {
    account_id: accountId,
    amount,
    currency: 'USD',
    type: 'payment',
    payment_method: paymentMethod,
    reference: `billing trigger ${paymentMethod}`,
  });

/** A us_ach account number (4-17 digits) unique to the run, so each recipe adds its own destination. */
/**
 * A test account number of its own per stamp. It ends in 8: no sandbox outcome suffix does (domain/payouts.ts
 * sandboxOutcomeBySuffix), so a payout to it is paid; a number taken from the stamp alone ended in one of them about
 * once in 900 runs, and that payout failed.
 */
const accountNumber = (stamp: string) =>
  `${`0${parseInt(stamp.replace(/[^0-9a-z]/g, '').slice(-8) || '1', 36)}`.slice(0, 16).padStart(7, '0')}8`;
/** A finalized send_invoice one-off invoice of $20.00 for the customer (its pending item attached). */
async function oneOffInvoice(
  call: Call,
  customerId: string,
  collection: 'send_invoice' | 'charge_automatically' = 'send_invoice',
  daysUntilDue = 14,
) {
  await call('POST', '/v1/invoice_items', {
    customer: customerId,
    amount: 2000,
    currency: 'USD',
    description: 'billing trigger work',
  });
  const terms =
    collection === 'send_invoice'
      ? { collection_method: collection, days_until_due: daysUntilDue }
      : { collection_method: collection };
  const draft = await call('POST', '/v1/invoices', { customer: customerId, ...terms, description: 'billing trigger' });
  return call('POST', `/v1/invoices/${draft.id}/finalize`);
}
/** Waits (up to 60 s) for the invoice's workflow to have charged it. */
async function paid(call: Call, invoiceId: string) {
  for (let i = 0; i < 120; i++) {
    const invoice = await call('GET', `/v1/invoices/${invoiceId}`);
    if (invoice.status === 'paid') return invoice;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new CliError(
    exitCodes.refused,
    'timeout',
    `invoice ${invoiceId} was not paid in 60 s (is the engine's worker running?)`,
  );
}

/** Polls `check` every 500 ms for up to `seconds`; the CLI error names `what` when it never holds. */
async function waitFor<T>(what: string, seconds: number, check: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < seconds * 2; i++) {
    const value = await check();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new CliError(
    exitCodes.refused,
    'timeout',
    `${what} did not happen in ${seconds} s (is the engine's worker running?)`,
  );
}

/** Advances a test clock to `to` and waits until every piece of work due on it has run. */
async function advanced(call: Call, clockId: string, to: number) {
  await call('POST', `/v1/test_clocks/${clockId}/advance`, { frozen_time: new Date(to).toISOString() });
  return waitFor(`test clock ${clockId} advancing`, 180, async () => {
    const now = await call('GET', `/v1/test_clocks/${clockId}`);
    if (now.status === 'internal_failure')
      throw new CliError(exitCodes.refused, 'internal_failure', `test clock ${clockId} failed to advance`);
    return now.status === 'ready' ? now : undefined;
  });
}

/** Whether the sandbox has recorded an event of `type` about the object `objectId`. */
async function recordedFor(call: Call, type: string, objectId: string): Promise<true | undefined> {
  const events = await call('GET', `/v1/events?type=${type}&limit=20`);
  const about = (e: { data: { object: { id?: string; alert?: { id: string } } } }) =>
    e.data.object.id === objectId || e.data.object.alert?.id === objectId;
  return events.data.some(about) ? true : undefined;
}

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

const recipesNow: readonly Recipe[] = [
  {
    events: ['customer.created', 'customer.updated'],
    async run(call, stamp) {
      const c = await customer(call, stamp);
      await call('PATCH', `/v1/customers/${c.id}`, { name: 'Triggered customer (renamed)' });
      return { customer: c.id };
    },
  },
  {
    events: [
      'transaction.created',
      'transaction.succeeded',
      'payment.succeeded',
      'transaction.updated',
      'payment.refunded',
    ],
    async run(call, _stamp, accountId) {
      const paid = await payment(call, accountId, 'pm_card_visa');
      await call('PATCH', `/v1/transactions/${paid.id}`, { reference: 'billing trigger (updated)' });
      const refund = await call('POST', '/v1/transactions', {
        account_id: accountId,
        amount: 500,
        currency: 'USD',
        type: 'refund',
        source_transaction: paid.id,
      });
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
    // The dispute test card: the sandbox processor raises dispute.created for the charge once the payment
    // has succeeded, through the Stripe webhook's handler (docs/processors.md#the-sandboxs-dispute-card).
    events: ['payment.disputed'],
    async run(call, _stamp, accountId) {
      return { transaction: (await payment(call, accountId, 'pm_card_createDispute')).id };
    },
  },
  {
    // The sandbox's notification settings saved as they are: the one account setting a test CLI key may change
    // (api/auth/cli-scope.ts); account.updated in the sandbox only, nothing changed.
    events: ['account.updated'],
    async run(call) {
      const current = await call('GET', '/v1/settings/notifications');
      await call('PATCH', '/v1/settings/notifications', { payout_confirmations: current.payout_confirmations });
      return {};
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
      const rate = await call('POST', '/v1/tax_rates', {
        display_name: 'Triggered tax',
        percentage: 10,
        inclusive: false,
      });
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
      const txn = await call('POST', `/v1/customers/${c.id}/balance_transactions`, {
        amount: -500,
        currency: 'USD',
        description: 'billing trigger credit',
      });
      return { customer: c.id, balance_transaction: txn.id };
    },
  },
  {
    events: ['invoiceitem.created', 'invoiceitem.updated', 'invoiceitem.deleted'],
    async run(call, stamp) {
      const c = await customer(call, stamp);
      const item = await call('POST', '/v1/invoice_items', {
        customer: c.id,
        amount: 1500,
        currency: 'USD',
        description: 'billing trigger item',
      });
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
      const clock = await call('POST', '/v1/test_clocks', {
        frozen_time: new Date(Date.UTC(2030, 0, 1)).toISOString(),
        name: `billing trigger ${stamp}`,
      });
      await call('DELETE', `/v1/test_clocks/${clock.id}`);
      return { test_clock: clock.id };
    },
  },
  {
    events: ['subscription.created', 'invoice.created', 'invoice.paid'],
    needsWorker: true,
    async run(call, stamp) {
      const c = await customer(call, stamp, 'pm_card_visa');
      const plan = await call('POST', '/v1/plans', {
        name: `Triggered plan ${stamp}`,
        amount: 1500,
        currency: 'USD',
        interval: 'month',
      });
      const sub = await call('POST', '/v1/subscriptions', { customer: c.id, plan: plan.id, trial_period_days: 0 });
      return {
        customer: c.id,
        plan: plan.id,
        subscription: sub.id,
        ...(sub.latest_invoice ? { invoice: sub.latest_invoice } : {}),
      };
    },
  },
  {
    events: [
      'subscription.plan_changed',
      'subscription.updated',
      'subscription.paused',
      'subscription.resumed',
      'subscription.canceled',
    ],
    needsWorker: true,
    async run(call, stamp) {
      const c = await customer(call, stamp, 'pm_card_visa');
      const plan = await call('POST', '/v1/plans', {
        name: `Triggered plan ${stamp}`,
        amount: 1500,
        currency: 'USD',
        interval: 'month',
      });
      const bigger = await call('POST', '/v1/plans', {
        name: `Triggered plan ${stamp} (more)`,
        amount: 3000,
        currency: 'USD',
        interval: 'month',
      });
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
  {
    events: ['bank_account.created', 'bank_account.updated', 'bank_account.deleted'],
    async run(call, stamp) {
      const account = await call('POST', '/v1/bank_accounts', {
        type: 'us_ach',
        account_holder_name: 'Triggered holder',
        currency: 'USD',
        routing_number: '110000000',
        account_number: accountNumber(stamp),
      });
      await call('PATCH', `/v1/bank_accounts/${account.id}`, { account_holder_name: 'Triggered holder (renamed)' });
      await call('DELETE', `/v1/bank_accounts/${account.id}`);
      return { bank_account: account.id };
    },
  },
  {
    events: ['payout.created', 'payout.canceled'],
    async run(call, stamp, accountId) {
      // A sandbox credit funds the available balance; a payout of it to a new destination, canceled while pending.
      const credit = await call('POST', '/v1/transactions', {
        account_id: accountId,
        amount: 1000,
        currency: 'USD',
        type: 'credit',
        reference: 'billing trigger payout funds',
      });
      const destination = await call('POST', '/v1/bank_accounts', {
        type: 'us_ach',
        account_holder_name: 'Triggered payee',
        currency: 'USD',
        routing_number: '110000000',
        account_number: accountNumber(`${stamp}p`),
      });
      const payout = await call('POST', '/v1/payouts', {
        amount: 1000,
        currency: 'USD',
        destination: destination.id,
        description: 'billing trigger',
      });
      await call('POST', `/v1/payouts/${payout.id}/cancel`);
      return { transaction: credit.id, bank_account: destination.id, payout: payout.id };
    },
  },
  {
    events: ['invoice.finalized', 'invoice.updated', 'invoice.marked_uncollectible', 'invoice.voided'],
    // Finalize starts the invoice's workflow and waits for it; the discount and the void are messages to it.
    needsWorker: true,
    async run(call, stamp) {
      const c = await customer(call, stamp);
      const invoice = await oneOffInvoice(call, c.id);
      const made = await coupon(call, stamp);
      await call('POST', `/v1/invoices/${invoice.id}/discounts`, { coupon: made.id });
      await call('POST', `/v1/invoices/${invoice.id}/mark_uncollectible`);
      await call('POST', `/v1/invoices/${invoice.id}/void`);
      return { customer: c.id, invoice: invoice.id, coupon: made.id };
    },
  },
  {
    events: ['credit_note.created', 'credit_note.voided'],
    needsWorker: true,
    async run(call, stamp) {
      // A credit note that lowered an open invoice's amount due cannot be voided: the invoice is charged to a card first, the note credits the customer's balance.
      const c = await customer(call, stamp, 'pm_card_visa');
      const invoice = await oneOffInvoice(call, c.id, 'charge_automatically');
      await paid(call, invoice.id);
      const note = await call('POST', '/v1/credit_notes', {
        invoice: invoice.id,
        amount: 500,
        credit_amount: 500,
        reason: 'product_unsatisfactory',
        memo: 'billing trigger',
      });
      await call('POST', `/v1/credit_notes/${note.id}/void`);
      return { customer: c.id, invoice: invoice.id, credit_note: note.id };
    },
  },
  {
    events: [
      'billing.meter.created',
      'billing.meter.updated',
      'billing.meter.deactivated',
      'billing.meter.reactivated',
    ],
    async run(call, stamp) {
      const meter = await call('POST', '/v1/meters', {
        display_name: 'Triggered meter',
        event_name: `trigger_${stamp}`,
        aggregation: 'sum',
        value_property: 'value',
      });
      await call('POST', `/v1/meters/${meter.id}`, { display_name: 'Triggered meter (renamed)' });
      await call('POST', `/v1/meters/${meter.id}/deactivate`);
      await call('POST', `/v1/meters/${meter.id}/reactivate`);
      return { meter: meter.id };
    },
  },
  {
    events: ['payment_request.created', 'payment_request.canceled'],
    // The request's workflow records it; the API waits for it.
    needsWorker: true,
    async run(call, stamp) {
      const request = await call('POST', '/api/v1/payment-requests', {
        type: 'one_time',
        amount: 1500,
        currency: 'USD',
        customer_email: `trigger-${stamp}@example.com`,
        reference: `billing trigger ${stamp}`,
      });
      await call('POST', `/api/v1/payment-requests/${request.id}/cancel`);
      return { payment_request: request.id };
    },
  },
  {
    events: ['recurring_payment_request.created', 'recurring_payment_request.canceled'],
    // The request's workflow records it; the API waits for it.
    needsWorker: true,
    async run(call, stamp) {
      const request = await call('POST', '/api/v1/payment-requests', {
        type: 'recurring',
        interval: 'month',
        amount: 1500,
        currency: 'USD',
        customer_email: `trigger-${stamp}@example.com`,
        reference: `billing trigger ${stamp}`,
      });
      await call('POST', `/api/v1/payment-requests/${request.id}/cancel`);
      return { recurring_payment_request: request.id };
    },
  },
  {
    events: ['transaction.canceled'],
    async run(call, _stamp, accountId) {
      // A bank payment stays pending until it settles: canceled before.
      const pending = await payment(call, accountId, 'pm_bank_pendingSettles');
      await call('DELETE', `/v1/transactions/${pending.id}`);
      return { transaction: pending.id };
    },
  },
  {
    events: ['test_clock.advancing', 'test_clock.ready', 'invoice.payment_failed', 'subscription.past_due'],
    // The clock's workflow advances it and the subscription's renews on it.
    needsWorker: true,
    async run(call, stamp) {
      // A subscription on a test clock whose card is declined from its first renewal: the clock is advanced past it.
      const start = Date.UTC(2030, 0, 1);
      const clock = await call('POST', '/v1/test_clocks', {
        frozen_time: new Date(start).toISOString(),
        name: `billing trigger ${stamp} (declined renewal)`,
      });
      const c = await call('POST', '/v1/customers', {
        email: `trigger-${stamp}@example.com`,
        name: 'Triggered customer',
        payment_method: 'pm_card_visa',
        test_clock: clock.id,
      });
      const plan = await call('POST', '/v1/plans', {
        name: `Triggered plan ${stamp}`,
        amount: 1500,
        currency: 'USD',
        interval: 'month',
      });
      const sub = await call('POST', '/v1/subscriptions', { customer: c.id, plan: plan.id, trial_period_days: 0 });
      await call('PATCH', `/v1/customers/${c.id}`, { payment_method: 'pm_card_chargeDeclined' });
      await call('POST', `/v1/test_clocks/${clock.id}/advance`, {
        frozen_time: new Date(start + 32 * 86_400_000).toISOString(),
      });
      for (let i = 0; i < 180; i++) {
        const now = await call('GET', `/v1/test_clocks/${clock.id}`);
        if (now.status === 'ready')
          return { test_clock: clock.id, customer: c.id, plan: plan.id, subscription: sub.id };
        if (now.status === 'internal_failure')
          throw new CliError(exitCodes.refused, 'internal_failure', `test clock ${clock.id} failed to advance`);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      throw new CliError(
        exitCodes.refused,
        'timeout',
        `test clock ${clock.id} was not ready in 90 s (is the engine's worker running?)`,
      );
    },
  },
  {
    events: ['export.succeeded'],
    // The export's workflow writes the file.
    needsWorker: true,
    async run(call) {
      const made = await call('POST', '/v1/exports', { resource: 'customers', format: 'csv' });
      for (let i = 0; i < 120; i++) {
        const e = await call('GET', `/v1/exports/${made.id}`);
        if (e.status === 'succeeded') return { export: made.id };
        if (e.status === 'failed')
          throw new CliError(exitCodes.refused, 'export_failed', `export ${made.id} failed: ${e.error}`);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      throw new CliError(
        exitCodes.refused,
        'timeout',
        `export ${made.id} did not finish in 60 s (is the engine's worker running?)`,
      );
    },
  },
];

/**
 * Recipes on a test clock: the events that need time to pass (a trial ending, a link expiring, a
 * payout arriving, a reminder, a recurring request's next period) happen when the clock is advanced.
 */
const onAClock: readonly Recipe[] = [
  {
    events: [
      'subscription.expired',
      'invoice.reminder_sent',
      'payment_request.failed',
      'recurring_payment_request.updated',
      'payout.updated',
      'payout.paid',
      'payout.failed',
    ],
    needsWorker: true,
    async run(call, stamp, accountId) {
      const start = Date.UTC(2030, 0, 1);
      const day = 86_400_000;
      const clock = await call('POST', '/v1/test_clocks', {
        frozen_time: new Date(start).toISOString(),
        name: `billing trigger ${stamp} (time passes)`,
      });
      const onClock = (suffix: string) =>
        call('POST', '/v1/customers', {
          email: `trigger-${stamp}${suffix}@example.com`,
          name: 'Triggered customer',
          test_clock: clock.id,
        });
      // A 3-day trial with no payment method: it expires when the trial ends.
      const trialing = await onClock('t');
      const plan = await call('POST', '/v1/plans', {
        name: `Triggered plan ${stamp}`,
        amount: 1500,
        currency: 'USD',
        interval: 'month',
      });
      const sub = await call('POST', '/v1/subscriptions', {
        customer: trialing.id,
        plan: plan.id,
        trial_period_days: 3,
      });
      // An invoice due in 2 days: its reminder goes on the due date.
      const billed = await onClock('i');
      const invoice = await oneOffInvoice(call, billed.id, 'send_invoice', 2);
      // A link that expires after a day, and a monthly request that issues its next one a month on.
      const expiring = await call('POST', '/api/v1/payment-requests', {
        type: 'one_time',
        amount: 1500,
        currency: 'USD',
        customer_email: `trigger-${stamp}@example.com`,
        reference: `billing trigger ${stamp} (expires)`,
        expires_at: new Date(start + day).toISOString(),
        test_clock: clock.id,
      });
      const recurring = await call('POST', '/api/v1/payment-requests', {
        type: 'recurring',
        interval: 'month',
        amount: 1500,
        currency: 'USD',
        customer_email: `trigger-${stamp}@example.com`,
        reference: `billing trigger ${stamp} (monthly)`,
        test_clock: clock.id,
      });
      // Two payouts on the clock, funded by a sandbox credit: one to a destination that is paid, one to a
      // test account number ending 1116 (no_account), which fails when it arrives.
      await call('POST', '/v1/transactions', {
        account_id: accountId,
        amount: 2000,
        currency: 'USD',
        type: 'credit',
        reference: 'billing trigger payout funds',
      });
      const payoutTo = async (accountNumber: string) => {
        const destination = await call('POST', '/v1/bank_accounts', {
          type: 'us_ach',
          account_holder_name: 'Triggered payee',
          currency: 'USD',
          routing_number: '110000000',
          account_number: accountNumber,
        });
        return call('POST', '/v1/payouts', {
          amount: 1000,
          currency: 'USD',
          destination: destination.id,
          description: 'billing trigger',
          test_clock: clock.id,
        });
      };
      const paidPayout = await payoutTo(accountNumber(`${stamp}c`));
      const failedPayout = await payoutTo(`${accountNumber(`${stamp}f`).slice(0, 8)}1116`);
      await advanced(call, clock.id, start + 35 * day);
      return {
        test_clock: clock.id,
        subscription: sub.id,
        invoice: invoice.id,
        payment_request: expiring.id,
        recurring_payment_request: recurring.id,
        payout: paidPayout.id,
        failed_payout: failedPayout.id,
      };
    },
  },
];

/** Recipes where the customer acts: the CLI does what the customer's browser would. */
const asTheCustomer: readonly Recipe[] = [
  {
    events: ['payment_request.updated', 'payment_request.succeeded'],
    // The request's workflow takes the pay page's attempts.
    needsWorker: true,
    async run(call, stamp, _accountId, postForm) {
      const request = await call('POST', '/api/v1/payment-requests', {
        type: 'one_time',
        amount: 1500,
        currency: 'USD',
        customer_email: `trigger-${stamp}@example.com`,
        reference: `billing trigger ${stamp} (paid on its page)`,
      });
      // The pay page's form as the customer sends it: a declined card first, then one that pays.
      const page = new URL(request.payment_url as string).pathname;
      const attempt = `trigger${stamp}`.replace(/[^A-Za-z0-9_-]/g, '').padEnd(16, '0');
      await postForm(page, { payment_method: 'pm_card_chargeDeclined', attempt });
      await postForm(page, { payment_method: 'pm_card_visa', attempt });
      await waitFor(`payment request ${request.id} paid`, 60, async () =>
        (await call('GET', `/api/v1/payment-requests/${request.id}`)).status === 'succeeded' ? true : undefined,
      );
      return { payment_request: request.id };
    },
  },
];

/** Recipes about usage. */
const onUsage: readonly Recipe[] = [
  {
    events: ['billing.alert.triggered'],
    async run(call, stamp) {
      const eventName = `trigger_alert_${stamp}`;
      const meter = await call('POST', '/v1/meters', {
        display_name: 'Triggered meter (alert)',
        event_name: eventName,
        aggregation: 'sum',
        value_property: 'value',
      });
      const c = await customer(call, stamp);
      const alert = await call('POST', '/v1/billing/alerts', {
        title: `billing trigger ${stamp}`,
        alert_type: 'usage_threshold',
        usage_threshold: { gte: 10, meter: meter.id, recurrence: 'one_time' },
        filter: { customer: c.id },
      });
      // The customer's usage this month reaches the alert's 10: the engine checks after the batch commits.
      await call('POST', '/v1/meter_events/batch', {
        events: [{ event_name: eventName, customer: c.id, identifier: `trigger-${stamp}`, payload: { value: 12 } }],
      });
      await waitFor(`alert ${alert.id} triggering`, 20, () => recordedFor(call, 'billing.alert.triggered', alert.id));
      return { meter: meter.id, customer: c.id, billing_alert: alert.id };
    },
  },
];

/**
 * Faults, through the sandbox test helpers (api/routes/test-helpers.ts): the engine's own failure
 * path runs (the export's writer fails until its retries are spent; the clock's advance waits for a
 * workflow that never reports), so the event is the one a real fault records.
 */
const faults: readonly Recipe[] = [
  {
    events: ['export.failed'],
    // The export's workflow runs its writer three times (about 6 s of retries), then records the failure.
    needsWorker: true,
    async run(call) {
      const made = await call('POST', '/v1/test_helpers/exports', { resource: 'customers', format: 'csv' });
      await waitFor(`export ${made.id} failing`, 90, async () => {
        const e = await call('GET', `/v1/exports/${made.id}`);
        if (e.status === 'succeeded')
          throw new CliError(exitCodes.refused, 'export_succeeded', `export ${made.id} succeeded: it was to fail`);
        return e.status === 'failed' ? true : undefined;
      });
      return { export: made.id };
    },
  },
  {
    events: ['test_clock.created', 'test_clock.advancing', 'test_clock.internal_failure'],
    // The clock's workflow waits 2 s for the stalled stand-in, then records the failure.
    needsWorker: true,
    async run(call, stamp) {
      const start = Date.UTC(2030, 0, 1);
      const clock = await call('POST', '/v1/test_clocks', {
        frozen_time: new Date(start).toISOString(),
        name: `billing trigger ${stamp} (stalled)`,
      });
      await call('POST', `/v1/test_helpers/test_clocks/${clock.id}/stall`, { quiet_timeout: 2 });
      await call('POST', `/v1/test_clocks/${clock.id}/advance`, {
        frozen_time: new Date(start + 86_400_000).toISOString(),
      });
      await waitFor(`test clock ${clock.id} failing`, 90, async () => {
        const now = await call('GET', `/v1/test_clocks/${clock.id}`);
        if (now.status === 'ready')
          throw new CliError(exitCodes.refused, 'test_clock_ready', `test clock ${clock.id} advanced: it was to fail`);
        return now.status === 'internal_failure' ? true : undefined;
      });
      return { test_clock: clock.id };
    },
  },
];

/**
 * The account events: a throwaway account signed up (public sign-up, as anyone may), then closed by
 * its owner. They are recorded in that account, not in the one the CLI is logged in to.
 */
const aThrowawayAccount: readonly Recipe[] = [
  {
    events: ['account.created', 'account.closed'],
    note:
      'account.created and account.closed are in the new throwaway account above, not in the account this CLI is logged in to ' +
      '(`billing events list` and `billing listen` do not show them). Its account.created was read with its own token; ' +
      'closing it revoked every credential it had, so its account.closed is visible to a platform admin only ' +
      '(GET /v1/events?type=account.closed with x-account-id). See docs/cli.md#trigger.',
    async run(_call, stamp, _accountId, _postForm, callAs) {
      const anyone = callAs(null);
      const email = `trigger-${stamp}@example.com`;
      // Random, and within the password policy (an uppercase letter, a digit: a v4 UUID has its 4, a symbol).
      const password = `Trigger-${globalThis.crypto.randomUUID()}`;
      const account = await anyone('POST', '/v1/accounts', {
        email,
        name: `billing trigger ${stamp}`,
        type: 'individual',
        password,
      });
      const session = await anyone('POST', '/v1/auth/login', { email, password });
      const owner = callAs(session.access_token as string);
      const created = await owner('GET', '/v1/events?type=account.created&limit=1');
      const closed = await owner('DELETE', '/v1/account');
      if (closed.status !== 'closed')
        throw new CliError(exitCodes.refused, 'not_closed', `account ${account.id} was not closed`);
      return { account: account.id, account_created_event: created.data[0]?.id ?? '' };
    },
  },
];

/**
 * The catalog's event types no recipe records, each with why: test/cli.test.ts fails on a type
 * that is neither here nor in a recipe, and docs/cli.md#trigger lists these. Empty: every type has one.
 */
export const notTriggered: Readonly<Record<string, string>> = {};

export const recipes: readonly Recipe[] = [
  ...recipesNow,
  ...onAClock,
  ...asTheCustomer,
  ...onUsage,
  ...faults,
  ...aThrowawayAccount,
];

/** Every event type some recipe records, once (a stalled clock's recipe records test_clock.created too). */
export const triggerableEvents: readonly string[] = [...new Set(recipes.flatMap((recipe) => recipe.events))];

export const recipeFor = (event: string): Recipe | undefined => recipes.find((recipe) => recipe.events.includes(event));
