import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';

import { SandboxProcessorCharge, SandboxProcessorRefund } from '../../db/entities/index.ts';
import { newId } from '../../domain/ids.ts';
import {
  type CheckoutRequest,
  type PaymentProcessor,
  type ProcessorChargeRequest,
  type ProcessorChargeResult,
  type ProcessorCustomerRequest,
  type ProcessorEvent,
  type ProcessorRefundRequest,
  type ProcessorRefundResult,
  type ProcessorSettlement,
  ProcessorSignatureError,
} from './types.ts';

/*
 * The built-in processor: no money moves. Every mode can run on it (development,
 * demos, the test mode of a Stripe-backed live mode); docs/processors.md.
 */

/** How long a sandbox pending charge takes to settle: the settlement workflow sleeps this long. */
export const sandboxSettlementDelayMs = 24 * 3_600_000;

/**
 * Sandbox test payment methods, in the spirit of Stripe's test cards. Any other
 * value is declined as `invalid_payment_method`.
 */
export const sandboxPaymentMethods = {
  pm_card_visa: { outcome: 'succeeded' },
  pm_card_mastercard: { outcome: 'succeeded' },
  /**
   * Succeeds, then the customer's bank disputes it (Stripe's pm_card_createDispute, card 4000 0000 0000 0259):
   * the sandbox raises `dispute.created` for the charge once its payment is recorded (services/money/sandbox-disputes.ts).
   */
  pm_card_createDispute: { outcome: 'succeeded', disputes: true },
  pm_card_chargeDeclined: { outcome: 'failed', code: 'card_declined', message: 'Your card was declined.' },
  pm_card_insufficientFunds: {
    outcome: 'failed',
    code: 'insufficient_funds',
    message: 'Your card has insufficient funds.',
  },
  pm_card_expired: { outcome: 'failed', code: 'expired_card', message: 'Your card has expired.' },
  /** Pending for a day (like a bank debit), then succeeds. */
  pm_bank_pendingSettles: { outcome: 'pending', settles: 'succeeded' },
  /** Pending for a day, then fails as a bank debit does. */
  pm_bank_pendingFails: {
    outcome: 'pending',
    settles: 'failed',
    code: 'debit_failed',
    message: 'The bank refused the debit.',
  },
} as const satisfies Record<
  string,
  | { outcome: 'succeeded'; disputes?: true }
  | { outcome: 'failed'; code: string; message: string }
  | { outcome: 'pending'; settles: 'succeeded' | 'failed'; code?: string; message?: string }
>;

export type SandboxPaymentMethod = keyof typeof sandboxPaymentMethods;

export function isSandboxPaymentMethod(value: string): value is SandboxPaymentMethod {
  return Object.hasOwn(sandboxPaymentMethods, value);
}

export class IdempotencyKeyReuseError extends Error {
  constructor(key: string) {
    super(`Idempotency key ${key} was already used for a different charge or refund.`);
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
    const method = isSandboxPaymentMethod(request.paymentMethod)
      ? sandboxPaymentMethods[request.paymentMethod]
      : undefined;
    const failure =
      method === undefined
        ? { code: 'invalid_payment_method', message: `Unknown sandbox payment method ${request.paymentMethod}.` }
        : method.outcome === 'failed'
          ? { code: method.code, message: method.message }
          : undefined;
    const status: 'failed' | 'pending' | 'succeeded' = failure
      ? 'failed'
      : method!.outcome === 'pending'
        ? 'pending'
        : 'succeeded';
    // Insert-or-keep on the key: concurrent or repeated calls all see the first row (read back only when it was there already).
    const id = newId('sandboxProcessorCharge');
    const inserted = await em
      .createQueryBuilder(SandboxProcessorCharge)
      .insert({
        id,
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
      .execute('run');
    const row =
      inserted.affectedRows > 0
        ? {
            id,
            amount: request.amount,
            currency: request.currency,
            status,
            failureCode: failure?.code ?? null,
            failureMessage: failure?.message ?? null,
          }
        : await em.findOneOrFail(SandboxProcessorCharge, { idempotencyKey: request.idempotencyKey });
    if (row.amount !== request.amount || row.currency !== request.currency) {
      // Same key, different charge: a bug upstream. Refuse rather than guess which one is meant.
      throw new IdempotencyKeyReuseError(request.idempotencyKey);
    }
    if (row.status === 'failed') {
      return {
        status: 'failed',
        processorChargeId: row.id,
        failureCode: row.failureCode ?? 'card_declined',
        failureMessage: row.failureMessage ?? 'Declined.',
      };
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
        fails
          ? { status: 'failed', failureCode: method.code, failureMessage: method.message }
          : { status: 'succeeded' },
      );
      return this.settlement(processorChargeId);
    }
    return row.status === 'succeeded'
      ? { status: 'succeeded' }
      : {
          status: 'failed',
          failureCode: row.failureCode ?? 'debit_failed',
          failureMessage: row.failureMessage ?? 'The charge failed.',
        };
  }

  /**
   * Refunds (part of) a succeeded sandbox charge, once per idempotency key (insert-or-keep,
   * like charge). Refused with `amount_too_large` when it exceeds the charge's amount minus
   * its earlier refunds; the charge row is locked meanwhile, so two racing refunds cannot
   * both fit into the same remainder. A repeated key answers the first outcome.
   */
  async refund(request: ProcessorRefundRequest): Promise<ProcessorRefundResult> {
    const row = await this.em().transactional(async (tx) => {
      const existing = await tx.findOne(SandboxProcessorRefund, { idempotencyKey: request.idempotencyKey });
      if (existing) return existing;
      const charge = await tx.findOne(
        SandboxProcessorCharge,
        { id: request.processorChargeId },
        { lockMode: LockMode.PESSIMISTIC_WRITE },
      );
      let failure: { code: string; message: string } | undefined;
      if (!charge || charge.status !== 'succeeded') {
        failure = {
          code: 'charge_not_refundable',
          message: `Sandbox charge ${request.processorChargeId} does not exist or has not succeeded.`,
        };
      } else if (charge.currency !== request.currency) {
        failure = {
          code: 'currency_mismatch',
          message: `The charge is in ${charge.currency}, not ${request.currency}.`,
        };
      } else if (!Number.isInteger(request.amount) || request.amount <= 0) {
        failure = { code: 'invalid_amount', message: 'A refund must be a positive amount.' };
      } else {
        const earlier = await tx.find(
          SandboxProcessorRefund,
          { chargeId: charge.id, status: 'succeeded' },
          { fields: ['amount'] },
        );
        const remaining = charge.amount - earlier.reduce((sum, refund) => sum + refund.amount, 0);
        if (request.amount > remaining) {
          failure = {
            code: 'amount_too_large',
            message: `Refund of ${request.amount} exceeds the ${remaining} left to refund on the charge.`,
          };
        }
      }
      await tx
        .createQueryBuilder(SandboxProcessorRefund)
        .insert({
          id: newId('sandboxProcessorRefund'),
          idempotencyKey: request.idempotencyKey,
          chargeId: request.processorChargeId,
          amount: request.amount,
          currency: request.currency,
          status: failure ? 'failed' : 'succeeded',
          failureCode: failure?.code ?? null,
          failureMessage: failure?.message ?? null,
          createdAt: new Date(),
        })
        .onConflict('idempotencyKey')
        .ignore()
        .execute();
      return tx.findOneOrFail(SandboxProcessorRefund, { idempotencyKey: request.idempotencyKey });
    });
    if (
      row.chargeId !== request.processorChargeId ||
      row.amount !== request.amount ||
      row.currency !== request.currency
    ) {
      throw new IdempotencyKeyReuseError(request.idempotencyKey);
    }
    return row.status === 'succeeded'
      ? { status: 'succeeded', processorRefundId: row.id }
      : {
          status: 'failed',
          processorRefundId: row.id,
          failureCode: row.failureCode ?? 'refund_failed',
          failureMessage: row.failureMessage ?? 'The refund failed.',
        };
  }

  /** The sandbox keeps no customers of its own: payment methods live on the engine's customer. */
  async upsertCustomer(_request: ProcessorCustomerRequest): Promise<null> {
    return null;
  }

  /** No hosted checkout: the engine's own pay page and billing-details page take the sandbox's test methods. */
  /** The sandbox has no hosted setup: its billing-details form saves the card itself. */
  async setupPaymentMethod(_setupIntentId: string): Promise<null> {
    return null;
  }

  async createCheckout(_request: CheckoutRequest): Promise<null> {
    return null;
  }

  /** The sandbox sends no webhooks, so none can verify (its disputes take the webhook's path in-process: services/money/sandbox-disputes.ts). */
  parseWebhook(_rawBody: string, _headers: Record<string, string | undefined>): ProcessorEvent {
    throw new ProcessorSignatureError('The sandbox processor sends no webhooks.');
  }
}
