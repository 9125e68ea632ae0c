import type { EntityManager } from '@mikro-orm/postgresql';

import { Account, type BalanceTransaction, Charge, Customer, Invoice } from '../../db/entities/index.ts';
import { newId } from '../../domain/ids.ts';
import type { ServiceContext, WorkflowStartContext } from '../context.ts';
import { ensureProcessorCustomer } from '../customers/processor-twins.ts';
import { withEventBatch } from '../events/record.ts';
import { recordInvoiceAttempt, recordInvoicePaymentFailed } from '../invoices/cycle-invoices.ts';
import type { InvoiceLinks } from '../invoices/events.ts';
import { charges as chargeAttempts } from '../observability/metrics.ts';
import { currentTime } from '../test-clocks/now.ts';
import { startAvailabilityOf } from './balances.ts';
import { withBalanceUpdatesLast } from './ledger.ts';
import { recordPaymentAttempt } from './record-payment-attempt.ts';
import { recentTransactionsCount } from './transactions.ts';

export interface ChargeInput {
  /** Deterministic: workflow id + purpose + cycle + attempt. The same key never charges twice. */
  idempotencyKey: string;
  /** The invoice this charge pays, and which attempt at it this is (1-based). */
  invoiceId: string;
  attempt: number;
  accountId: string;
  customerId: string;
  amount: number;
  currency: string;
  description: string;
  livemode: boolean;
  /** A method given for this charge (a one-off invoice's hosted pay page), instead of the customer's own. */
  paymentMethod?: string;
}

/** `transactionId`: the payment transaction of the attempt (absent in outcomes recorded before there was one; null when no charge was made). */
export type ChargeOutcome =
  | { status: 'succeeded'; chargeId: string; transactionId?: string | null }
  | {
      status: 'failed';
      chargeId: string | null;
      failureCode: string;
      failureMessage: string;
      transactionId?: string | null;
    };

/**
 * Charges a customer's current payment method once per idempotency key.
 *
 * Three layers keep money right when this runs more than once (activity retry,
 * worker crash between the processor call and our write, workflow replay):
 * an existing charge row answers at once; the processor itself honours the key;
 * the charge row's unique key makes a racing second insert a no-op.
 * A declined card is an outcome, not an error: the workflow decides what follows.
 *
 * Every attempt that reached the processor is a `payment` transaction of the
 * account, linked to the invoice, subscription and customer, written in the SAME
 * database transaction as the charge row (whose unique key is the exactly-once
 * guard): `succeeded` with its ledger entries (money pending until available_on),
 * or `failed` with the decline reason and no entries. A retry (activity retry, a
 * crash between the processor and the database) finds the charge row and its
 * transaction; a racing second insert writes neither. A declined charge of an
 * invoice records `invoice.payment_failed` and `payment.failed` (with the
 * invoice, and the failed transaction's id) once, in that same transaction.
 * After the commit, `ctx.temporal` starts the availability workflow of the money.
 */
/**
 * What a charge reaches: each mode's processor, the links its invoice events carry, and where the availability
 * workflow of its money starts (none: the maintenance reconciler starts it).
 */
export type ChargeServices = Pick<ServiceContext, 'processors'> & {
  links: InvoiceLinks;
} & Partial<WorkflowStartContext>;

/**
 * What a caller that has them already can pass chargeCustomer, to spare it the reads
 * (renewCycle: services/subscriptions/renew-cycle.ts), and what it runs inside the charge's database
 * transaction when the charge succeeded and was recorded by this call.
 */
export interface ChargeContext {
  account?: Pick<Account, 'status' | 'createdAt'>;
  customer?: Customer | null;
  /** The invoice's subscription (null: none); unset, it is read from the invoice. */
  subscriptionId?: string | null;
  /** The caller created the invoice just now: no charge of it can exist yet, so none is looked for. */
  newInvoice?: boolean;
  /**
   * Runs in the charge's database transaction, after a succeeded payment is recorded: what must
   * commit with it. It marks the invoice paid and counts the attempt there (markInvoicePaid with
   * `attempt`): chargeCustomer then leaves the invoice alone, one statement fewer.
   */
  onRecorded?: (tx: EntityManager, paid: RecordedPayment) => Promise<void>;
  /** The money's availability is the caller's workflow's: its balance transaction is written owned, and none is started. */
  fundsOwnedByWorkflow?: boolean;
}

/** What onRecorded gets: the charge, its payment transaction, the invoice's attempt it was and its money still pending (null: available at once). */
export interface RecordedPayment {
  chargeId: string;
  transactionId: string;
  attempt: number;
  pending: Pick<BalanceTransaction, 'id' | 'availableOn'> | null;
}

export async function chargeCustomer(
  ctx: ChargeServices,
  em: EntityManager,
  input: ChargeInput,
  context: ChargeContext = {},
): Promise<ChargeOutcome> {
  const { processors, links } = ctx;
  const processor = processors.forMode(input.livemode);
  const existing = context.newInvoice ? null : await em.findOne(Charge, { idempotencyKey: input.idempotencyKey });
  if (existing) {
    await recordInvoiceAttempt(em, input.invoiceId, input.attempt);
    if (existing.status === 'succeeded' && existing.transactionId && !context.fundsOwnedByWorkflow)
      await startAvailabilityOf(em, ctx, existing.transactionId);
    return toOutcome(existing);
  }

  // A closed account is charged no more (a subscription may still be winding down): refused, with no processor call.
  const account = context.account ?? (await em.findOne(Account, { id: input.accountId }, { fields: ['status'] }));
  if (account?.status === 'closed')
    return refusedWithoutCharge(em, input, links, 'account_closed', 'The account is closed.');
  const customer =
    context.customer !== undefined
      ? context.customer
      : await em.findOne(Customer, { id: input.customerId, accountId: input.accountId });
  if (!customer?.paymentMethod && !input.paymentMethod)
    return refusedWithoutCharge(em, input, links, 'no_payment_method', 'The customer has no payment method.');
  const paymentMethod = input.paymentMethod ?? customer!.paymentMethod!;
  // On Stripe the card is charged through its Stripe customer (made now for customers from before there was one).
  const processorCustomerId = await ensureProcessorCustomer(em, processors, customer!);
  const answer = await processor.charge({
    idempotencyKey: input.idempotencyKey,
    amount: input.amount,
    currency: input.currency,
    paymentMethod,
    description: input.description,
    processorCustomerId,
  });
  // Subscriptions need the money now: a method that only settles later cannot pay them (yet).
  const result =
    answer.status === 'pending'
      ? {
          status: 'failed' as const,
          failureCode: 'payment_method_unsupported',
          failureMessage: 'This payment method settles later and cannot pay subscriptions.',
        }
      : answer;
  const chargeId = newId('charge');
  // The attempt's payment transaction, named up front so the charge row is written with it (no update after).
  const transactionId = newId('transaction');
  let recorded: ChargeOutcome | undefined;
  // The payment's, the invoice's and the caller's events (onRecorded) in one insert at the end.
  // The money's balance row is updated last (withBalanceUpdatesLast): a wave of one account's renewals queues on it for a statement, not the transaction.
  await em.transactional((tx) =>
    withBalanceUpdatesLast(tx, () =>
      withEventBatch(tx, async () => {
        const insert = tx
          .createQueryBuilder(Charge)
          .insert({
            id: chargeId,
            idempotencyKey: input.idempotencyKey,
            accountId: input.accountId,
            customerId: input.customerId,
            amount: input.amount,
            currency: input.currency,
            paymentMethod,
            status: result.status,
            failureCode: result.status === 'failed' ? result.failureCode : null,
            failureMessage: result.status === 'failed' ? result.failureMessage : null,
            livemode: input.livemode,
            createdAt: currentTime(),
            transactionId,
          })
          .onConflict('idempotencyKey')
          .ignore()
          .toQuery();
        // In the same statement (one round trip): the risk score's count of the account's transactions of the past hour.
        const velocity = recentTransactionsCount(input.accountId, currentTime());
        const [claim] = await tx
          .getConnection()
          .execute<
            { inserted: number; recent: number }[]
          >(`with inserted as (${insert.sql} returning 1) select (select count(*) from inserted)::int as inserted, (${velocity.sql}) as recent`, [...insert.params, ...velocity.params], 'all', tx.getTransactionContext());
        // The charge row, its transaction and the events of a decline commit together; a racing second insert records none of them.
        if (!claim || claim.inserted === 0) return;
        const subscriptionId =
          context.subscriptionId !== undefined
            ? context.subscriptionId
            : ((await tx.findOne(Invoice, { id: input.invoiceId }))?.subscriptionId ?? null);
        const owner = context.account?.createdAt ? context.account : undefined;
        const { transaction, balanceTransaction } = await recordPaymentAttempt(
          tx,
          {
            id: transactionId,
            accountId: input.accountId,
            livemode: input.livemode,
            amount: input.amount,
            currency: input.currency,
            reference: input.description.slice(0, 500),
            metadata: {},
            paymentMethod,
            links: {
              invoiceId: input.invoiceId,
              subscriptionId,
              customerId: input.customerId,
              processorChargeId: answer.processorChargeId,
            },
          },
          result,
          // payment.succeeded/failed are the invoice's (with the invoice), not the transaction's.
          {
            processor: processor.name,
            owner,
            paymentEvents: false,
            fundsOwnedByWorkflow: context.fundsOwnedByWorkflow,
            transactionsLastHour: claim.recent,
          },
        );
        if (result.status === 'failed') {
          await recordInvoiceAttempt(tx, input.invoiceId, input.attempt);
          await recordInvoicePaymentFailed(tx, links, input.invoiceId, transaction.id);
          recorded = {
            status: 'failed',
            chargeId,
            transactionId: transaction.id,
            failureCode: result.failureCode,
            failureMessage: result.failureMessage,
          };
          return;
        }
        // The attempt is counted with its charge (by onRecorded's markInvoicePaid when there is one).
        if (context.onRecorded)
          await context.onRecorded(tx, {
            chargeId,
            transactionId: transaction.id,
            attempt: input.attempt,
            pending: balanceTransaction?.status === 'pending' ? balanceTransaction : null,
          });
        else await recordInvoiceAttempt(tx, input.invoiceId, input.attempt);
        recorded = { status: 'succeeded', chargeId, transactionId: transaction.id };
      }),
    ),
  );
  // Recorded by this call: its outcome is known. Otherwise a racing call recorded the charge: read what it wrote.
  const outcome =
    recorded ?? toOutcome(await em.fork().findOneOrFail(Charge, { idempotencyKey: input.idempotencyKey }));
  if (recorded) chargeAttempts.inc({ kind: 'invoice', outcome: recorded.status, livemode: String(input.livemode) });
  if (outcome.status === 'succeeded' && outcome.transactionId && !context.fundsOwnedByWorkflow)
    await startAvailabilityOf(em.fork(), ctx, outcome.transactionId);
  return outcome;
}

/**
 * An attempt refused before the processor (closed account, no payment method): no charge row is
 * written, so the invoice's attempt count tells a first call from a retry, and only the first
 * records invoice.payment_failed.
 */
async function refusedWithoutCharge(
  em: EntityManager,
  input: ChargeInput,
  links: InvoiceLinks,
  failureCode: string,
  failureMessage: string,
): Promise<ChargeOutcome> {
  await em.transactional(async (tx) => {
    if (await recordInvoiceAttempt(tx, input.invoiceId, input.attempt))
      await recordInvoicePaymentFailed(tx, links, input.invoiceId);
  });
  return { status: 'failed', chargeId: null, failureCode, failureMessage };
}

function toOutcome(charge: Charge): ChargeOutcome {
  return charge.status === 'succeeded'
    ? { status: 'succeeded', chargeId: charge.id, transactionId: charge.transactionId ?? null }
    : {
        status: 'failed',
        chargeId: charge.id,
        transactionId: charge.transactionId ?? null,
        failureCode: charge.failureCode ?? 'card_declined',
        failureMessage: charge.failureMessage ?? 'The charge was declined.',
      };
}
