import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';

import {
  Account,
  Charge,
  Customer,
  Event,
  Invoice,
  type InvoiceLine,
  type InvoiceStatus,
} from '../../db/entities/index.ts';
import { newId } from '../../domain/ids.ts';
import { billingReasonOf } from '../../domain/invoice-billing-reason.ts';
import { invoicePrefix } from '../../domain/invoice-number.ts';
import { type DateStyle, humanizeInstants } from '../../domain/locale.ts';
import type { ChargeOutcome } from '../money/charges.ts';
import { insertRowsPart } from '../platform/row-inserts.ts';
import { currentTime } from '../test-clocks/now.ts';
import {
  type ClaimedLateEvent,
  claimedUsageAdjustmentLines,
  takesUsageAdjustments,
  usageAdjustmentsClaim,
} from '../usage/late-events.ts';
import { decideIssue, unapplyBalance } from './adjustments.ts';
import { invoiceEventRows, type InvoiceLinks, recordInvoiceEvents } from './events.ts';
import { claimedItems, itemLines, pendingItemsClaim, takesPendingItems } from './items.ts';

export interface OpenInvoiceInput {
  /** subscription + cycle: one invoice per billing cycle, whatever happens to the activity. */
  billingKey: string;
  subscriptionId: string;
  accountId: string;
  customerId: string;
  currency: string;
  /** `amount` is per unit (negative for a credit); `proration: true` marks a plan change's lines. */
  lines: InvoiceLine[];
  periodStart: string;
  periodEnd: string;
  /** Workflow time of issue, so invoices dated in skipped test time read right. */
  issuedAt: string;
  livemode: boolean;
}

export interface OpenedInvoice {
  invoiceId: string;
  number: string;
  /** What to charge: the total, or 0 when the lines add up to a credit. */
  amountDue: number;
}

/** An invoice as the workflow needs to know it before it charges again (dunning) or gives up. */
export interface InvoiceState {
  invoiceId: string;
  number: string;
  status: InvoiceStatus;
  amountDue: number;
  amountPaid: number;
  attemptCount: number;
}

const opened = (invoice: Invoice): OpenedInvoice => ({
  invoiceId: invoice.id,
  number: invoice.number,
  amountDue: invoice.amountDue,
});

/**
 * Records an open invoice for a billing cycle, or returns the one already recorded for it.
 *
 * Its number is the next of the account's sequence in this mode: the counter row is
 * incremented (`insert ... on conflict do update ... returning`, which locks the row)
 * in the same database transaction that inserts the invoice. Concurrent invoices of
 * one account queue on that lock and get consecutive numbers; an insert that fails
 * (two calls racing with one billing key) rolls the increment back, so a retry never
 * uses up a number and the sequence has no gaps. `invoice.created` is recorded in
 * that same transaction.
 *
 * The number is given last (insertNumberedInvoice): ONE statement, just before the commit, takes
 * the number and inserts the invoice and its event with it (no unit of work: the invoice is
 * only inserted). Taken first, the counter's lock was held through the invoice's and the
 * event's inserts, and a wave of one account's renewals queued on it (docs/scaling.md); now
 * each holds it for one statement and the commit.
 */
export async function openInvoice(
  em: EntityManager,
  links: InvoiceLinks,
  input: OpenInvoiceInput,
  loaded?: { account: Account; customer: Customer | null },
): Promise<OpenedInvoice> {
  return (await openOrCreateInvoice(em, links, input, loaded)).invoice;
}

/**
 * The CTEs that take an account's next invoice number, for numberInvoice and insertNumberedInvoice: `counter` adds one
 * to the account's counter of the mode (created at 1 with `prefix`; the row stays locked until the commit), and
 * `next_number` is the number as domain/invoice-number.ts formatInvoiceNumber formats it (the prefix, a dash, the
 * sequence in at least four digits). Its parameters, first in the statement: account id, livemode, prefix.
 */
const takeInvoiceNumber = `counter as (
       insert into invoice_number_counters (account_id, livemode, prefix, last_number) values (?, ?, ?, 1)
       on conflict (account_id, livemode) do update set last_number = invoice_number_counters.last_number + 1
       returning prefix, last_number::text as sequence
     ), next_number as (
       select counter.prefix || '-' || lpad(counter.sequence, greatest(4, length(counter.sequence)), '0') as number from counter
     )`;

/**
 * Takes the invoice's number from the account's counter (which locks the counter row until
 * the commit) and writes it into the invoice and its `invoice.created` event, written with the
 * invoice id in its place: one statement, the last before the commit (a one-off invoice's finalization,
 * services/invoices/one-off.ts; a cycle's invoice is written with its number: insertNumberedInvoice).
 * The number is formatted as domain/invoice-number.ts formatInvoiceNumber does (at least four digits).
 */
export async function numberInvoice(
  tx: EntityManager,
  ids: { invoiceId: string; eventId: string; accountId: string; livemode: boolean; prefix: string },
): Promise<string> {
  const [row] = await tx.execute<{ number: string }[]>(
    `with ${takeInvoiceNumber}, numbered as (
       update invoices set number = next_number.number from next_number where invoices.id = ? returning invoices.number
     )
     update events set data = jsonb_set(events.data, '{object,number}', to_jsonb(numbered.number))
     from numbered where events.id = ? returning numbered.number`,
    [ids.accountId, ids.livemode, ids.prefix, ids.invoiceId, ids.eventId],
  );
  // No row: the event was not written yet (held back in a batch?); the transaction must not commit half-numbered.
  if (!row)
    throw new Error(`Invoice ${ids.invoiceId}: its invoice.created event ${ids.eventId} was not found to number.`);
  return row.number;
}

/**
 * numberInvoice for an invoice not written yet, in ONE statement: takes the number from the account's counter (which
 * locks the counter row until the commit), and inserts the invoice (`invoice`: its row, the number a placeholder) and
 * its events (their rows, `data.object.number` a placeholder) with it. The last statement before the commit, as
 * numberInvoice; an invoice that exists (its billing key's unique index) fails it, and the number is not used up.
 */
export async function insertNumberedInvoice(
  tx: EntityManager,
  input: {
    accountId: string;
    livemode: boolean;
    prefix: string;
    invoice: Record<string, unknown>;
    events: Record<string, unknown>[];
  },
): Promise<string> {
  const invoice = insertRowsPart(tx, Invoice, [input.invoice], {
    from: 'next_number',
    set: { number: 'next_number.number' },
  });
  const events = insertRowsPart(tx, Event, input.events, {
    from: 'next_number',
    set: { data: `jsonb_set(r.data, '{object,number}', to_jsonb(next_number.number))` },
  });
  const [row] = await tx.execute<{ number: string }[]>(
    `with ${takeInvoiceNumber}, invoice as (${invoice.sql}), events as (${events.sql})
     select number from next_number`,
    [input.accountId, input.livemode, input.prefix, ...invoice.params, ...events.params],
  );
  return row!.number;
}

/**
 * What a new invoice of `input.billingKey` takes, claimed for `input.invoiceId` in `tx`: the customer's pending invoice
 * items (a billing cycle's invoice) and the subscription's late meter events (a cycle's or the final usage invoice), as
 * lines. Both claims are ONE statement (two data-modifying CTEs; each room writes its own UPDATE); none when it takes
 * neither.
 */
async function claimCycleLines(
  tx: EntityManager,
  input: OpenInvoiceInput & { invoiceId: string },
  dateStyle: DateStyle,
): Promise<{ items: InvoiceLine[]; adjustments: Awaited<ReturnType<typeof claimedUsageAdjustmentLines>> }> {
  const itemsClaim = takesPendingItems(input.billingKey) ? pendingItemsClaim(input) : null;
  const lateClaim = takesUsageAdjustments(input.billingKey) ? usageAdjustmentsClaim(input) : null;
  if (!itemsClaim && !lateClaim) return { items: [], adjustments: [] };
  const parts = [itemsClaim && `items as (${itemsClaim.sql})`, lateClaim && `late as (${lateClaim.sql})`].filter(
    Boolean,
  );
  const [row] = await tx.execute<{ items: Record<string, unknown>[]; late: ClaimedLateEvent[] }[]>(
    `with ${parts.join(', ')}
     select ${itemsClaim ? `(select coalesce(json_agg(i), '[]'::json) from items i)` : `'[]'::json`} as items,
            ${lateClaim ? `(select coalesce(json_agg(l), '[]'::json) from late l)` : `'[]'::json`} as late`,
    [...(itemsClaim?.bindings ?? []), ...(lateClaim?.bindings ?? [])],
  );
  return {
    items: itemLines(claimedItems(tx, row!.items), dateStyle),
    adjustments: await claimedUsageAdjustmentLines(tx, input, row!.late, dateStyle),
  };
}

/** openInvoice, saying whether this call created the invoice (nothing can have been charged for it yet) or found it. */
export async function openOrCreateInvoice(
  em: EntityManager,
  links: InvoiceLinks,
  input: OpenInvoiceInput,
  loaded?: { account: Account; customer: Customer | null },
): Promise<{ invoice: OpenedInvoice; created: boolean }> {
  // No lookup first: the billing key's unique index tells a repeat, whose insert (and number) rolls back.
  const [account, customer] = loaded
    ? [loaded.account, loaded.customer]
    : await Promise.all([
        em.findOneOrFail(Account, { id: input.accountId }),
        em.findOne(Customer, { id: input.customerId, accountId: input.accountId }),
      ]);
  // Lines as customers read them, here (the API), in emails and PDFs alike: an instant in a description
  // (an upgrade's "Unused time on Pro after 2027-01-31T…", domain/subscription-decisions.ts) becomes a
  // date in the account's language and time zone; period_start and period_end keep the exact instants.
  const dateStyle = { timeZone: account.settings.timezone, locale: account.settings.language };
  const lines = input.lines.map((line) => ({
    ...line,
    description: humanizeInstants(line.description, dateStyle),
    proration: line.proration ?? false,
  }));
  try {
    return await em.transactional(async (tx) => {
      const id = newId('invoice');
      // A billing cycle's invoice takes the customer's pending invoice items, claimed for it in this transaction: an insert
      // that loses the race on the billing key gives them back, so an item is billed exactly once (services/invoices/items.ts).
      // So does it take the subscription's late meter events (late_events = bill_next_invoice) as usage adjustment
      // lines, claimed in this transaction: a rolled-back insert gives them back (services/usage/late-events.ts).
      const { items, adjustments } = await claimCycleLines(tx, { ...input, invoiceId: id }, dateStyle);
      // Discounts, taxes and the customer's balance (locked from here to the commit), on the final lines: the row is
      // inserted once, with its totals.
      const issue = await decideIssue(
        tx,
        {
          accountId: input.accountId,
          livemode: input.livemode,
          customerId: input.customerId,
          subscriptionId: input.subscriptionId,
          currency: input.currency,
          at: new Date(input.issuedAt),
        },
        [...lines, ...items, ...adjustments],
      );
      const row = {
        id,
        // A placeholder: insertNumberedInvoice writes the row with the number it takes.
        number: id,
        billingKey: input.billingKey,
        billingReason: billingReasonOf(input.billingKey, input.subscriptionId),
        subscriptionId: input.subscriptionId,
        accountId: input.accountId,
        customerId: input.customerId,
        customerEmail: customer?.email ?? null,
        customerName: customer?.name ?? null,
        status: 'open' as const,
        currency: input.currency,
        ...issue.fields,
        amountPaid: 0,
        attemptCount: 0,
        periodStart: new Date(input.periodStart),
        periodEnd: new Date(input.periodEnd),
        chargeId: null,
        transactionId: null,
        amountRefunded: 0,
        livemode: input.livemode,
        createdAt: new Date(input.issuedAt),
        paidAt: null,
        voidedAt: null,
        markedUncollectibleAt: null,
      };
      // Only inserted, with its event and number in one statement: no unit of work (services/platform/row-inserts.ts).
      // The balance movement and the discount's use are written first (no foreign key waits for the invoice row).
      const invoice = tx.create(Invoice, row, { persist: false });
      await issue.record(id);
      const number = await insertNumberedInvoice(tx, {
        accountId: input.accountId,
        livemode: input.livemode,
        prefix: invoicePrefix(account.name, account.id),
        invoice: row,
        events: invoiceEventRows(links, invoice, ['invoice.created']),
      });
      const result = { invoice: { ...opened(invoice), number }, created: true };
      // Nothing of the invoice is managed; what issue.record wrote is flushed: detached, nothing is merged into the caller's EntityManager.
      tx.clear();
      return result;
    });
  } catch (error) {
    // The invoice exists (a retried activity), or another call with this billing key won the race: its invoice (and number) is the one.
    if (error instanceof UniqueConstraintViolationException) {
      const winner = await em.fork().findOne(Invoice, { billingKey: input.billingKey });
      if (winner) return { invoice: opened(winner), created: false };
    }
    throw error;
  }
}

/**
 * Marks an invoice paid by a successful charge. Repeating it changes nothing.
 * An uncollectible invoice that gets paid after all becomes paid; a void one stays void.
 * `paidAt` is the workflow's time of payment; without it, the later of the issue
 * time and now. `transaction` becomes the charge's payment transaction. The change
 * records `invoice.paid` and `payment.succeeded`, with that transaction's id.
 */
export async function settleInvoice(
  em: EntityManager,
  links: InvoiceLinks,
  invoiceId: string,
  charge: ChargeOutcome,
  paidAt?: string,
): Promise<void> {
  if (charge.status !== 'succeeded') return;
  // An outcome recorded before charges had transactions carries no id: the charge row knows it.
  const transactionId =
    charge.transactionId ?? (await em.findOne(Charge, { id: charge.chargeId }))?.transactionId ?? null;
  await em.transactional((tx) =>
    markInvoicePaid(tx, links, invoiceId, { chargeId: charge.chargeId, transactionId }, paidAt),
  );
}

/**
 * settleInvoice's change on `tx` (the caller's database transaction): one UPDATE that
 * answers with the row, then its events. Answers the paid invoice, or null when it was
 * not payable (already paid: a retry; or void), which records nothing.
 */
export async function markInvoicePaid(
  tx: EntityManager,
  links: InvoiceLinks,
  invoiceId: string,
  /** `attempt`: the charge's attempt, counted here too (chargeCustomer's onRecorded: services/money/charges.ts). */
  paid: { chargeId: string; transactionId: string | null; attempt?: number },
  paidAt?: string,
): Promise<Invoice | null> {
  const table = tx.getMetadata(Invoice).tableName;
  // Without the workflow's time: the later of the issue time and now.
  const at = paidAt ? '?' : 'greatest(?, created_at)';
  const rows = await tx
    .getConnection()
    .execute<
      Record<string, unknown>[]
    >(`update ${table} set status = 'paid', amount_paid = amount_due, charge_id = ?, transaction_id = ?, paid_at = ${at}, attempt_count = greatest(attempt_count, ?) where id = ? and status in ('open', 'uncollectible') returning *`, [paid.chargeId, paid.transactionId, paidAt ? new Date(paidAt) : currentTime(), paid.attempt ?? 0, invoiceId], 'all', tx.getTransactionContext());
  if (rows.length === 0) return null;
  const invoice = tx.map(Invoice, rows[0]!);
  await recordInvoiceEvents(tx, links, invoice, ['invoice.paid', 'payment.succeeded']);
  return invoice;
}

/** Which statuses each manual transition starts from (Stripe's rules). */
export const invoiceTransitions = {
  void: ['open', 'uncollectible'],
  uncollectible: ['open'],
} as const satisfies Record<string, readonly InvoiceStatus[]>;
export type InvoiceTransition = keyof typeof invoiceTransitions;

export type TransitionResult =
  | { outcome: 'changed'; invoice: Invoice }
  | { outcome: 'refused'; invoice: Invoice }
  | { outcome: 'not_found' };

/**
 * Voids an invoice or marks it uncollectible, with the status check in the UPDATE's
 * WHERE: a payment settling at the same moment either lands first (and the
 * transition is refused) or finds the invoice no longer payable.
 * `scope` limits it to one account and mode (the API); the workflow passes none.
 * A change records `invoice.voided` or `invoice.marked_uncollectible` with it.
 */
export async function transitionInvoice(
  em: EntityManager,
  links: InvoiceLinks,
  invoiceId: string,
  to: InvoiceTransition,
  at: Date,
  scope?: { accountId: string; livemode: boolean },
): Promise<TransitionResult> {
  const where = { id: invoiceId, ...(scope ?? {}) };
  const changes =
    to === 'void'
      ? { status: 'void' as const, voidedAt: at }
      : { status: 'uncollectible' as const, markedUncollectibleAt: at };
  return em.transactional(async (tx) => {
    const changed = await tx.nativeUpdate(Invoice, { ...where, status: { $in: [...invoiceTransitions[to]] } }, changes);
    const invoice = await tx.findOne(Invoice, where, { refresh: true });
    if (!invoice) return { outcome: 'not_found' as const };
    if (changed > 0 && to === 'void') await unapplyBalance(tx, invoice, at);
    if (changed > 0)
      await recordInvoiceEvents(tx, links, invoice, [
        to === 'void' ? 'invoice.voided' : 'invoice.marked_uncollectible',
      ]);
    return { outcome: changed > 0 ? ('changed' as const) : ('refused' as const), invoice };
  });
}

/** The invoice's current state, for a workflow deciding whether to charge again. */
export async function invoiceState(em: EntityManager, invoiceId: string): Promise<InvoiceState> {
  const invoice = await em.findOneOrFail(Invoice, { id: invoiceId });
  return {
    invoiceId: invoice.id,
    number: invoice.number,
    status: invoice.status,
    amountDue: invoice.amountDue,
    amountPaid: invoice.amountPaid,
    attemptCount: invoice.attemptCount,
  };
}

/**
 * Counts payment attempt `attempt` on an invoice. Idempotent: the count only rises
 * to `attempt`. Answers whether this call raised it (false for a repeat). Runs on
 * `em`'s transaction.
 */
export async function recordInvoiceAttempt(em: EntityManager, invoiceId: string, attempt: number): Promise<boolean> {
  const changed = await em.nativeUpdate(
    Invoice,
    { id: invoiceId, attemptCount: { $lt: attempt } },
    { attemptCount: attempt },
  );
  return changed > 0;
}

/**
 * The events of a failed charge for an invoice (`invoice.payment_failed` and
 * `payment.failed`, with the invoice), on `em`'s transaction. Charges that pay no
 * invoice record nothing.
 */
export async function recordInvoicePaymentFailed(
  em: EntityManager,
  links: InvoiceLinks,
  invoiceId: string,
  transactionId: string | null = null,
): Promise<void> {
  const invoice = await em.findOne(Invoice, { id: invoiceId }, { refresh: true });
  if (invoice)
    await recordInvoiceEvents(em, links, invoice, ['invoice.payment_failed', 'payment.failed'], transactionId);
}
