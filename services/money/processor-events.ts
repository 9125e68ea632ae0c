/**
 * What the engine does with a verified processor webhook (POST /webhooks/stripe,
 * api/routes/processor-webhooks.ts). Each processor event is recorded once in
 * `processor_events` (unique per processor and event id) and acted on under a lock
 * on that row, so a redelivery (Stripe retries until it gets a 2xx, and may send
 * an event twice) or two racing deliveries act once. `processed_at` says the
 * engine has acted on it; a row without it is recorded, waiting for what can act
 * on it (see docs/processors.md), and a redelivery tries again.
 */
import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';

import { Customer, PaymentRequest, ProcessorEvent as ProcessorEventRow, Transaction } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { serializeCustomer } from '../../objects/customer.ts';
import { serializeTransaction } from '../../objects/transaction.ts';
import { customerBalances } from '../customers/balance.ts';
import { recordEvent } from '../events/record.ts';
import type { ProcessorEvent } from '../processors/types.ts';
import { settlePaymentAttempt } from './record-payment-attempt.ts';
import { finishRefund, reserveRefund } from './refunds.ts';
import { newTransactionFields } from './transactions.ts';

export interface IncomingProcessorEvent {
  processor: 'sandbox' | 'stripe';
  /** The processor's event id (Stripe: evt_...). */
  eventId: string;
  /** The processor's own event type (payment_intent.succeeded...). */
  type: string;
  /** The mode whose webhook secret verified it. */
  livemode: boolean;
  /** The event as the processor sent it. */
  payload: Record<string, unknown>;
  /** The adapter's reading of it. */
  event: ProcessorEvent;
}

/** What acting on an event needs beyond the database (the API passes them; see api/routes/processor-webhooks.ts). */
export interface ProcessorEventActions {
  /** A hosted checkout paid a payment request: pays it (services/payment-requests/commands.ts settleCheckoutPayment). */
  settleCheckout?(input: {
    paymentRequestId: string;
    processorChargeId: string;
    paymentMethod: string;
  }): Promise<{ transactionId: string; paid: boolean }>;
}

export type ProcessorEventAction =
  /** a pending payment recorded as succeeded or failed */
  | 'settled'
  /** a payment request paid through a hosted checkout */
  | 'paid'
  /** payment.disputed raised on the transaction */
  | 'disputed'
  /** a refund made at the processor (Stripe's dashboard) recorded on the ledger */
  | 'refunded'
  /** a setup checkout (billing-details page) saved its card as the customer's payment method */
  | 'payment_method_saved'
  /** kept in processor_events; nothing more to do now (refunds, checkouts, payments already final, unknown charges) */
  | 'recorded'
  /** an event type the engine does not act on */
  | 'ignored';

export interface ProcessorEventResult {
  /** The event had been acted on already (a redelivery). */
  duplicate: boolean;
  action: ProcessorEventAction;
  transactionId: string | null;
  /** The customer whose payment method changed ('payment_method_saved'): the caller wakes its subscriptions after the commit. */
  customerId?: string;
}

function chargeIdOf(event: ProcessorEvent): string | null {
  return 'processorChargeId' in event && event.processorChargeId ? event.processorChargeId : null;
}

/** The engine's payment a processor charge belongs to: named by the charge's metadata, else by an earlier event about that charge. */
async function findPayment(tx: EntityManager, incoming: IncomingProcessorEvent): Promise<Transaction | null> {
  const metadata = 'metadata' in incoming.event ? incoming.event.metadata : {};
  let transactionId: string | null = metadata.transaction_id ?? null;
  const chargeId = chargeIdOf(incoming.event);
  if (!transactionId && chargeId) {
    const earlier = await tx.findOne(
      ProcessorEventRow,
      {
        processor: incoming.processor,
        processorChargeId: chargeId,
        livemode: incoming.livemode,
        transactionId: { $ne: null },
      },
      { fields: ['transactionId'] },
    );
    transactionId = earlier?.transactionId ?? null;
  }
  if (!transactionId && chargeId) {
    // The payment's own processor charge id (card payments, checkouts, subscription charges).
    const byCharge = await tx.findOne(
      Transaction,
      { processorChargeId: chargeId, livemode: incoming.livemode, type: 'payment' },
      { fields: ['id'] },
    );
    transactionId = byCharge?.id ?? null;
  }
  if (!transactionId) return null;
  // A charge of the other mode, or anything but a payment, is not this event's.
  return tx.findOne(Transaction, { id: transactionId, livemode: incoming.livemode, type: 'payment' });
}

export async function handleProcessorEvent(
  em: EntityManager,
  incoming: IncomingProcessorEvent,
  actions: ProcessorEventActions = {},
): Promise<ProcessorEventResult> {
  return em.transactional(async (tx) => {
    await tx
      .createQueryBuilder(ProcessorEventRow)
      .insert({
        id: newId('processorEvent'),
        processor: incoming.processor,
        processorEventId: incoming.eventId,
        type: incoming.type,
        livemode: incoming.livemode,
        processorChargeId: chargeIdOf(incoming.event),
        transactionId: null,
        payload: incoming.payload,
        processedAt: null,
        createdAt: new Date(),
      })
      .onConflict(['processor', 'processorEventId'])
      .ignore()
      .execute();
    // Locked: a racing delivery of the same event waits here and then finds it processed.
    const row = await tx.findOneOrFail(
      ProcessorEventRow,
      { processor: incoming.processor, processorEventId: incoming.eventId },
      { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
    );
    if (row.processedAt)
      return { duplicate: true, action: 'recorded' as const, transactionId: row.transactionId ?? null };

    const event = incoming.event;
    const done = async (
      action: ProcessorEventAction,
      transactionId: string | null,
      processed: boolean,
    ): Promise<ProcessorEventResult> => {
      await tx.nativeUpdate(
        ProcessorEventRow,
        { id: row.id },
        { transactionId, ...(processed && { processedAt: new Date() }) },
      );
      return { duplicate: false, action, transactionId };
    };
    switch (event.type) {
      case 'charge.succeeded':
      case 'charge.failed': {
        const payment = await findPayment(tx, incoming);
        // Not ours (a charge made outside the engine) or not known yet: kept, a redelivery tries again.
        if (!payment) return done('recorded', null, false);
        if (payment.status !== 'pending') return done('recorded', payment.id, true);
        await settlePaymentAttempt(
          tx,
          payment.id,
          event.type === 'charge.succeeded'
            ? { status: 'succeeded' }
            : {
                status: 'failed',
                failureCode: event.failureCode ?? 'payment_failed',
                failureMessage: event.failureMessage ?? 'The payment failed at the processor.',
              },
          // The processor's charge id goes on the payment (refunds and disputes find it by it); its money's delay is the processor's.
          { processorChargeId: event.processorChargeId, processor: incoming.processor },
        );
        return done('settled', payment.id, true);
      }
      case 'dispute.created': {
        const payment = await findPayment(tx, incoming);
        if (!payment) return done('recorded', null, false);
        await recordEvent(tx, {
          accountId: payment.accountId,
          livemode: payment.livemode,
          type: 'payment.disputed',
          object: serializeTransaction(payment),
          transactionId: payment.id,
        });
        return done('disputed', payment.id, true);
      }
      case 'refund.created': {
        const payment = await findPayment(tx, incoming);
        // A charge the engine does not know (yet): kept.
        if (!payment) return done('recorded', null, false);
        // A refund the engine asked for names its own transaction: it is on the ledger already.
        if (event.metadata.refund_transaction_id) return done('recorded', event.metadata.refund_transaction_id, true);
        // The same Stripe refund under another event id: once.
        const [existing] = await tx
          .getConnection()
          .execute<
            { id: string }[]
          >(`select id from transactions where type = 'refund' and source_transaction_id = ? and metadata ->> 'processor_refund_id' = ?`, [payment.id, event.processorRefundId], 'all', tx.getTransactionContext());
        if (existing) return done('recorded', existing.id, true);
        // Made in Stripe's dashboard: the money has left; it goes on the ledger as a succeeded refund of the payment.
        const fields = await newTransactionFields(tx, {
          accountId: payment.accountId,
          livemode: payment.livemode,
          amount: event.amount,
          currency: event.currency,
          type: 'refund',
          reference: 'Refunded at the processor',
          metadata: { processor_refund_id: event.processorRefundId },
          paymentMethod: null,
        });
        try {
          const refund = await reserveRefund(tx, fields, {
            sourceTransactionId: payment.id,
            scope: { accountId: payment.accountId, livemode: payment.livemode },
          });
          await finishRefund(tx, refund.id, { status: 'succeeded' });
          return done('refunded', refund.id, true);
        } catch (error) {
          // More than the engine thinks is left, another currency, not enough balance: kept unprocessed for a person to look at.
          if (error instanceof ApiError) return done('recorded', payment.id, false);
          throw error;
        }
      }
      case 'checkout.completed': {
        const paymentRequestId = event.metadata.payment_request_id;
        // A setup session of the billing-details page: its card becomes the customer's payment method,
        // as the sandbox form saves one (the same customer.updated event as PATCH /v1/customers).
        if (!paymentRequestId && event.metadata.customer_id && event.paymentMethod) {
          const customer = await tx.findOne(Customer, { id: event.metadata.customer_id, livemode: incoming.livemode });
          if (!customer) return done('recorded', null, true);
          if (customer.paymentMethod === event.paymentMethod)
            return { ...(await done('recorded', null, true)), customerId: customer.id };
          customer.paymentMethod = event.paymentMethod;
          customer.updatedAt = new Date();
          await tx.flush();
          await recordEvent(tx, {
            accountId: customer.accountId,
            livemode: customer.livemode,
            type: 'customer.updated',
            object: serializeCustomer(customer, await customerBalances(tx, customer.id)),
            transactionId: null,
          });
          return { ...(await done('payment_method_saved', null, true)), customerId: customer.id };
        }
        // A checkout made outside the engine: kept.
        if (!paymentRequestId) return done('recorded', null, true);
        const request = await tx.findOne(PaymentRequest, { id: paymentRequestId, livemode: incoming.livemode });
        if (!request) return done('recorded', null, true);
        // Paid later (a bank debit at the checkout): its payment_intent.succeeded does not name the request; kept until then.
        if (event.paymentStatus !== 'paid' || !event.processorChargeId) return done('recorded', null, false);
        if (event.amount !== null && (event.amount !== request.amount || event.currency !== request.currency)) {
          throw new Error(
            `checkout ${event.checkoutId} paid ${event.amount} ${event.currency} for payment request ${request.id} of ${request.amount} ${request.currency}`,
          );
        }
        if (!actions.settleCheckout) throw new Error('settling a checkout needs the settleCheckout action');
        // Under the event row's lock: a racing redelivery waits, then finds it processed. The workflow and
        // the ledger write are idempotent on their own too (one transaction per processor charge).
        const settled = await actions.settleCheckout({
          paymentRequestId: request.id,
          processorChargeId: event.processorChargeId,
          paymentMethod: event.paymentMethod ?? event.checkoutId,
        });
        return done(settled.paid ? 'paid' : 'recorded', settled.transactionId, true);
      }
      default:
        return done('ignored', null, true);
    }
  });
}
