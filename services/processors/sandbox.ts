import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { SandboxProcessorCharge, SandboxProcessorRefund } from '../../db/entities/index.ts';
import { newId } from '../../domain/ids.ts';
import type { ProcessorRefundRequest, ProcessorRefundResult } from './types.ts';

export type { ProcessorRefundRequest, ProcessorRefundResult } from './types.ts';

/** What we ask a payment processor to do: take `amount` from a payment method, once per key. */
export interface ProcessorChargeRequest {
  idempotencyKey: string;
  amount: number;
  currency: string;
  paymentMethod: string;
  description: string;
}

export type ProcessorChargeResult =
  | { status: 'succeeded'; processorChargeId: string }
  | { status: 'pending'; processorChargeId: string }
  | { status: 'failed'; processorChargeId: string; failureCode: string; failureMessage: string };

/** How a pending charge ended, when asked after its settlement delay. */
export type ProcessorSettlement =
  | { status: 'succeeded' }
  | { status: 'failed'; failureCode: string; failureMessage: string };

/**
 * The seam to a payment processor. A live adapter (Stripe, Adyen...) implements
 * this with the processor's own idempotency keys; the sandbox one ships here.
 * Implementations must return the first outcome again for a repeated key.
 */
export interface PaymentProcessor {
  /** Which processor this is (how long its payments' money stays pending: domain/balance-availability.ts); sandbox when absent. */
  readonly name?: 'sandbox' | 'stripe';
  charge(request: ProcessorChargeRequest): Promise<ProcessorChargeResult>;
  /** The final outcome of a charge that answered `pending` (bank debits, some wallets). */
  settlement(processorChargeId: string): Promise<ProcessorSettlement>;
  /** Gives back part or all of a succeeded charge, once per idempotency key. */
  refund(request: ProcessorRefundRequest): Promise<ProcessorRefundResult>;
}

/** How long a sandbox pending charge takes to settle: the settlement workflow sleeps this long. */
export const sandboxSettlementDelayMs = 24 * 3_600_000;

/**
 * Sandbox test payment methods, in the spirit of Stripe's test cards. Any other
 * value is declined as `invalid_payment_method`.
 */
export const sandboxPaymentMethods = {
  pm_card_visa: { outcome: 'succeeded' },
  pm_card_mastercard: { outcome: 'succeeded' },
  pm_card_chargeDeclined: { outcome: 'failed', code: 'card_declined', message: 'Your card was declined.' },
  pm_card_insufficientFunds: { outcome: 'failed', code: 'insufficient_funds', message: 'Your card has insufficient funds.' },
  pm_card_expired: { outcome: 'failed', code: 'expired_card', message: 'Your card has expired.' },
  /** Pending for a day (like a bank debit), then succeeds. */
  pm_bank_pendingSettles: { outcome: 'pending', settles: 'succeeded' },
  /** Pending for a day, then fails as a bank debit does. */
  pm_bank_pendingFails: { outcome: 'pending', settles: 'failed', code: 'debit_failed', message: 'The bank refused the debit.' },
} as const satisfies Record<
  string,
  { outcome: 'succeeded' } | { outcome: 'failed'; code: string; message: string } | { outcome: 'pending'; settles: 'succeeded' | 'failed'; code?: string; message?: string }
>;

export type SandboxPaymentMethod = keyof typeof sandboxPaymentMethods;

export function isSandboxPaymentMethod(value: string): value is SandboxPaymentMethod {
  return Object.hasOwn(sandboxPaymentMethods, value);
}

export class IdempotencyKeyReuseError extends Error {
  constructor(key: string) {
    super(`Idempotency key ${key} was already used for a different charge.`);
    this.name = 'IdempotencyKeyReuseError';
  }
}

/** The built-in processor: outcomes chosen by the test payment method, kept in its own table. */
export class SandboxProcessor implements PaymentProcessor {
  readonly name = 'sandbox' as const;
  private readonly em: () => EntityManager;

  constructor(em: () => EntityManager) {
    this.em = em;
  }

  async charge(request: ProcessorChargeRequest): Promise<ProcessorChargeResult> {
    const em = this.em();
    const method = isSandboxPaymentMethod(request.paymentMethod) ? sandboxPaymentMethods[request.paymentMethod] : undefined;
    const failure =
      method === undefined
        ? { code: 'invalid_payment_method', message: `Unknown sandbox payment method ${request.paymentMethod}.` }
        : method.outcome === 'failed'
          ? { code: method.code, message: method.message }
          : undefined;
    const status = failure ? 'failed' : method!.outcome === 'pending' ? 'pending' : 'succeeded';
    // Insert-or-keep on the key: concurrent or repeated calls all see the first row.
    await em
      .createQueryBuilder(SandboxProcessorCharge)
      .insert({
        id: newId('sandboxProcessorCharge'),
        idempotencyKey: request.idempotencyKey,
        amount: request.amount,
        currency: request.currency,
        paymentMethod: request.paymentMethod,
        status,
        failureCode: failure?.code ?? null,
        failureMessage: failure?.message ?? null,
        createdAt: new Date(),
      })
      .onConflict('idempotencyKey')
      .ignore()
      .execute();
    const row = await em.findOneOrFail(SandboxProcessorCharge, { idempotencyKey: request.idempotencyKey });
    if (row.amount !== request.amount || row.currency !== request.currency) {
      // Same key, different charge: a bug upstream. Refuse rather than guess which one is meant.
      throw new IdempotencyKeyReuseError(request.idempotencyKey);
    }
    if (row.status === 'failed') {
      return { status: 'failed', processorChargeId: row.id, failureCode: row.failureCode ?? 'card_declined', failureMessage: row.failureMessage ?? 'Declined.' };
    }
    return { status: row.status, processorChargeId: row.id };
  }

  /** A pending sandbox charge ends as its test method says; asking again answers the same. */
  async settlement(processorChargeId: string): Promise<ProcessorSettlement> {
    const em = this.em();
    const row = await em.findOneOrFail(SandboxProcessorCharge, { id: processorChargeId });
    if (row.status === 'pending') {
      const method = sandboxPaymentMethods[row.paymentMethod as SandboxPaymentMethod];
      const fails = method.outcome === 'pending' && method.settles === 'failed';
      await em.nativeUpdate(
        SandboxProcessorCharge,
        { id: row.id, status: 'pending' },
        fails ? { status: 'failed', failureCode: method.code, failureMessage: method.message } : { status: 'succeeded' },
      );
      return this.settlement(processorChargeId);
    }
    return row.status === 'succeeded'
      ? { status: 'succeeded' }
      : { status: 'failed', failureCode: row.failureCode ?? 'debit_failed', failureMessage: row.failureMessage ?? 'The charge failed.' };
  }

  /**
   * Refunds a succeeded sandbox charge, once per idempotency key (a repeated key
   * answers the first refund). Refused (`failed`) for an unknown or unpaid charge,
   * and for more than what is left of it: the sandbox keeps its own book of refunds
   * as a real processor does, under a lock on the charge's row.
   */
  async refund(request: ProcessorRefundRequest): Promise<ProcessorRefundResult> {
    return this.em().transactional(async (tx) => {
      const existing = await tx.findOne(SandboxProcessorRefund, { idempotencyKey: request.idempotencyKey });
      if (existing) return { status: 'succeeded', processorRefundId: existing.id };
      const charge = await tx.findOne(SandboxProcessorCharge, { id: request.processorChargeId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
      if (!charge || charge.status !== 'succeeded') {
        return { status: 'failed', processorRefundId: null, failureCode: 'charge_not_refundable', failureMessage: `No succeeded charge ${request.processorChargeId}.` };
      }
      // Locked above: a racing refund with the same key waits here and finds this one's row.
      const again = await tx.findOne(SandboxProcessorRefund, { idempotencyKey: request.idempotencyKey }, { refresh: true });
      if (again) return { status: 'succeeded', processorRefundId: again.id };
      const [row] = await tx
        .getConnection()
        .execute<{ total: string | number }[]>(`select coalesce(sum(amount), 0) as total from sandbox_processor_refunds where charge_id = ?`, [charge.id], 'all', tx.getTransactionContext());
      const refunded = Number(row!.total);
      if (request.currency !== charge.currency || refunded + request.amount > charge.amount) {
        return { status: 'failed', processorRefundId: null, failureCode: 'amount_too_large', failureMessage: `At most ${charge.amount - refunded} ${charge.currency} of ${charge.id} is left to refund.` };
      }
      const refund = tx.create(SandboxProcessorRefund, {
        id: newId('sandboxProcessorRefund'),
        idempotencyKey: request.idempotencyKey,
        chargeId: charge.id,
        amount: request.amount,
        currency: request.currency,
        createdAt: new Date(),
      });
      await tx.flush();
      return { status: 'succeeded', processorRefundId: refund.id };
    });
  }
}
