/**
 * One billing cycle of a subscription in one call: open the cycle's invoice, charge it
 * (first attempt), settle it and write the subscription's projection. The subscription
 * workflow runs it as ONE local activity when a renewal (or a trial's first charge) comes
 * due, instead of four activities each with its own round trip through Temporal
 * (workflows/subscription.ts, patch `renew-cycle`; docs/scaling.md).
 *
 * Database work: the account and customer are read once, in one statement; the invoice is one
 * transaction (its row, event and number written in one statement; no lookup first: a repeat
 * fails on the billing key and rolls back); then, after the processor answered, ONE transaction
 * records the charge, the payment with its ledger entries and its pending money owned by the
 * workflow, the paid invoice with the attempt counted, the projection, and all their events
 * (chargeCustomer's `onRecorded`, withEventBatch), each write that can be one statement with
 * another written with it; then the receipt: 19 statements in all (docs/scaling.md lists them,
 * and how the count came down).
 *
 * Every step is idempotent on its own key, so a retried local activity (a worker that
 * died mid-way, a workflow task that timed out and is replayed) never doubles money:
 * - the invoice: one per billing key (openInvoice returns the one already recorded);
 * - the charge: one per idempotency key `<billing key>:attempt:1` (chargeCustomer finds
 *   the charge row, unless this call created the invoice; the processor honours the key
 *   too, and the charge row's unique key makes a racing second record a no-op);
 * - settling: only an open invoice becomes paid, once, with its events once;
 * - the receipt: one email per invoice (dedupe key);
 * - the projection: versioned, a retry with the same version writes nothing.
 *
 * The paid money's availability: with `ownFunds` (patch `funds-in-subscription`) the
 * subscription workflow itself waits for its available_on, so no workflow is started per
 * payment; the pending balance transactions are written owned by a workflow (the
 * maintenance reconciler leaves them alone; a retry claims them) and returned. Without it, a
 * fundsAvailabilityWorkflow is started for them, as before.
 *
 * A declined charge (or one that cannot be made) writes no projection: the workflow takes
 * it from there on the path it always had (dunning, or a trial that expires), with the
 * invoice and outcome this call returns.
 */
import type { EntityManager } from '@mikro-orm/postgresql';

import { Account, Customer, type Invoice } from '../../db/entities/index.ts';
import type { SubscriptionSnapshot } from '../../domain/subscription.ts';
import type { WorkflowStartContext } from '../context.ts';
import {
  markInvoicePaid,
  type OpenedInvoice,
  type OpenInvoiceInput,
  openOrCreateInvoice,
  settleInvoice,
} from '../invoices/cycle-invoices.ts';
import { claimPendingFunds, type PendingFunds, pendingFunds } from '../money/balances.ts';
import { chargeCustomer, type ChargeOutcome } from '../money/charges.ts';
import { renewals } from '../observability/metrics.ts';
import { type NotifyContext, sendInvoiceReceipt, settleInvoiceWithoutCharge } from './billing-notices.ts';
import { projectSubscription, projectSubscriptionOn } from './projection.ts';

export interface RenewCycleInput {
  invoice: OpenInvoiceInput;
  /** The first attempt's charge: idempotency key `<billing key>:attempt:1`; invoice, amount and description come from the invoice. */
  charge: { idempotencyKey: string; accountId: string; customerId: string; currency: string; livemode: boolean };
  /** The workflow's time of payment. */
  paidAt: string;
  /** The subscription once this cycle is paid (its `latestInvoiceId` is filled in here); projected when paid. */
  paid: SubscriptionSnapshot;
  /** The same when the invoice costs nothing (a credit covered it): no charge, and no receipt. */
  free: SubscriptionSnapshot;
  /** The workflow waits for the paid money's available_on itself (returned as `funds`) instead of a workflow started for it. */
  ownFunds?: boolean;
}

/** A payment's money still pending, owned by the workflow (services/money/balances.ts). */
export type { PendingFunds } from '../money/balances.ts';

export type RenewCycleResult =
  | { status: 'paid'; invoice: OpenedInvoice; snapshot: SubscriptionSnapshot; funds?: PendingFunds[] }
  /** Not paid: nothing projected; the workflow decides what follows (dunning, or the trial expires). */
  | { status: 'unpaid'; invoice: OpenedInvoice; outcome: Extract<ChargeOutcome, { status: 'failed' }> };

/**
 * What a renewal reaches: each mode's processor, the links its invoice and receipt carry, the mailer of the receipt,
 * and where the availability workflow of its money starts (an activity's own client and queue).
 */
export type RenewCycleDeps = NotifyContext & Partial<WorkflowStartContext>;

/**
 * `em`: a factory of entity managers; each step works on a fork of its own, as the separate
 * activities did. On the first run of a cycle the payment, the paid invoice, the projection
 * and the claim on the money commit in ONE database transaction with the charge (the charge
 * row's unique key guards them all); the account and customer are read once for every step.
 * A retry that finds the charge recorded settles and projects again, each a no-op when done.
 */
export async function renewCycle(
  em: () => EntityManager,
  deps: RenewCycleDeps,
  input: RenewCycleInput,
): Promise<RenewCycleResult> {
  const { account, customer } = await accountAndCustomer(em(), input.invoice.accountId, input.invoice.customerId);
  const { invoice, created } = await openOrCreateInvoice(em(), deps.links, input.invoice, { account, customer });
  // Counted once per cycle: by the call that made its invoice (a retried activity finds it made).
  const counted = (outcome: 'paid' | 'free' | 'unpaid') =>
    created && renewals.inc({ cycle: input.invoice.billingKey.endsWith(':cycle:0') ? 'first' : 'renewal', outcome });
  if (invoice.amountDue === 0) {
    await settleInvoiceWithoutCharge(em(), deps.links, invoice.invoiceId, input.paidAt);
    const snapshot = { ...input.free, latestInvoiceId: invoice.invoiceId };
    await projectSubscription(em(), snapshot);
    counted('free');
    return { status: 'paid', invoice, snapshot };
  }
  const snapshot = { ...input.paid, latestInvoiceId: invoice.invoiceId };
  let paid: { invoice: Invoice | null; funds?: PendingFunds[] } | undefined;
  const outcome = await chargeCustomer(
    deps,
    em(),
    {
      ...input.charge,
      invoiceId: invoice.invoiceId,
      attempt: 1,
      amount: invoice.amountDue,
      description: `Invoice ${invoice.number}`,
    },
    {
      account,
      customer,
      subscriptionId: input.invoice.subscriptionId,
      newInvoice: created,
      // The money pending is written owned by this workflow, which waits for it (no workflow started for it).
      fundsOwnedByWorkflow: input.ownFunds,
      // With the charge, in its database transaction: the invoice paid (and the attempt counted), the projection.
      onRecorded: async (tx, charge) => {
        const settled = await markInvoicePaid(tx, deps.links, invoice.invoiceId, charge, input.paidAt);
        await projectSubscriptionOn(tx, snapshot);
        paid = {
          invoice: settled,
          ...(input.ownFunds ? { funds: pendingFunds(charge.pending ? [charge.pending] : []) } : {}),
        };
      },
    },
  );
  if (outcome.status !== 'succeeded') {
    counted('unpaid');
    return { status: 'unpaid', invoice, outcome };
  }
  counted('paid');
  if (!paid) {
    // A retry (or a race lost): the charge was recorded before; each of these is a no-op once done.
    await settleInvoice(em(), deps.links, invoice.invoiceId, outcome, input.paidAt);
    await projectSubscription(em(), snapshot);
    paid = {
      invoice: null,
      ...(input.ownFunds && outcome.transactionId
        ? { funds: await claimPendingFunds(em(), outcome.transactionId) }
        : {}),
    };
  }
  // The receipt goes last: the money and the projection are recorded even when the mail server is down (a retry sends it once).
  await sendInvoiceReceipt(
    em(),
    deps,
    invoice.invoiceId,
    paid.invoice ? { invoice: paid.invoice, account, customer } : undefined,
  );
  return { status: 'paid', invoice, snapshot, ...(paid.funds ? { funds: paid.funds } : {}) };
}

/** The account and the customer (null: none of the account's), in ONE statement: read once for every step. */
async function accountAndCustomer(
  em: EntityManager,
  accountId: string,
  customerId: string,
): Promise<{ account: Account; customer: Customer | null }> {
  const [row] = await em.execute<
    { account: Record<string, unknown> | null; customer: Record<string, unknown> | null }[]
  >(
    `select (select row_to_json(a) from accounts a where a.id = ?) as account,
            (select row_to_json(c) from customers c where c.id = ? and c.account_id = ?) as customer`,
    [accountId, customerId, accountId],
  );
  // No such account: findOneOrFail's error, as before.
  if (!row?.account) return { account: await em.findOneOrFail(Account, { id: accountId }), customer: null };
  return {
    account: em.map(Account, row.account),
    customer: row.customer ? em.map(Customer, row.customer) : null,
  };
}
