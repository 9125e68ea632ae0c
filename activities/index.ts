import { Context } from '@temporalio/activity';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { PaymentRequestSnapshot, RecurringPaymentRequestSnapshot } from '../domain/payment-requests.ts';
import type { SubscriptionSnapshot } from '../domain/subscription.ts';
import type { PaymentRequestWorkflowInput } from '../workflows/payment-request.ts';
import { chargeCustomer, type ChargeInput, type ChargeOutcome } from './charges.ts';
import { sendEmailOnce, type EmailInput } from './email.ts';
import type { Mailer } from './mailer.ts';
import {
  invoiceState,
  openInvoice,
  settleInvoice,
  transitionInvoice,
  type InvoiceState,
  type OpenInvoiceInput,
  type OpenedInvoice,
} from './invoices.ts';
import {
  allocatePaymentRequest,
  chargePaymentRequest,
  issuePaymentRequest,
  projectPaymentRequest,
  projectRecurringPaymentRequest,
  type PaymentRequestChargeInput,
  type PaymentRequestChargeOutcome,
} from './payment-requests.ts';
import { settlePendingPayment } from './payments.ts';
import { SandboxProcessor, type PaymentProcessor } from './processor.ts';
import { projectSubscription } from './projections.ts';

export interface ActivityDeps {
  orm: MikroORM;
  /** Defaults to the sandbox processor on the same database. */
  processor?: PaymentProcessor;
  /** Where customer emails go (SMTP, or .eml files in development). */
  mailer: Mailer;
}

/**
 * Every side effect the workflows can ask for. Built by a factory so the worker
 * wires real dependencies and tests can wrap them (a crashing processor, say).
 * Each call works on its own fork of the entity manager.
 */
export function createActivities(deps: ActivityDeps) {
  const em = () => deps.orm.em.fork();
  const processor = deps.processor ?? new SandboxProcessor(em);
  return {
    async projectSubscription(snapshot: SubscriptionSnapshot): Promise<void> {
      await projectSubscription(em(), snapshot);
    },
    async openInvoice(input: OpenInvoiceInput): Promise<OpenedInvoice> {
      return openInvoice(em(), input);
    },
    async charge(input: ChargeInput): Promise<ChargeOutcome> {
      Context.current().log.info('charging', { idempotencyKey: input.idempotencyKey, amount: input.amount, currency: input.currency });
      return chargeCustomer(em(), processor, input);
    },
    /** `paidAt`: the workflow's time of payment (optional; see settleInvoice). */
    async settleInvoice(invoiceId: string, charge: ChargeOutcome, paidAt?: string): Promise<void> {
      await settleInvoice(em(), invoiceId, charge, paidAt);
    },
    /** For dunning: whether the invoice is still open (it may have been voided, marked uncollectible or paid meanwhile). */
    async getInvoice(invoiceId: string): Promise<InvoiceState> {
      return invoiceState(em(), invoiceId);
    },
    /** Voids an open or uncollectible invoice (e.g. when its subscription is canceled). Returns the resulting state either way. */
    async voidInvoice(invoiceId: string, at: string): Promise<InvoiceState> {
      await transitionInvoice(em(), invoiceId, 'void', new Date(at));
      return invoiceState(em(), invoiceId);
    },
    /** Marks an open invoice uncollectible (e.g. when dunning gives up). Returns the resulting state either way. */
    async markInvoiceUncollectible(invoiceId: string, at: string): Promise<InvoiceState> {
      await transitionInvoice(em(), invoiceId, 'uncollectible', new Date(at));
      return invoiceState(em(), invoiceId);
    },
    async sendEmail(input: EmailInput): Promise<{ sent: boolean; messageId: string }> {
      return sendEmailOnce(em(), deps.mailer, input);
    },
    /** A new payment request's id and link secret (random: an activity, so a replay reads the recorded result). */
    async allocatePaymentRequest(): Promise<{ id: string; token: string }> {
      return allocatePaymentRequest();
    },
    async projectPaymentRequest(snapshot: PaymentRequestSnapshot): Promise<void> {
      await projectPaymentRequest(em(), snapshot);
    },
    async projectRecurringPaymentRequest(snapshot: RecurringPaymentRequestSnapshot): Promise<void> {
      await projectRecurringPaymentRequest(em(), snapshot);
    },
    /** Starts a payment request's own workflow (for a recurring request) and waits until it has recorded itself. */
    async issuePaymentRequest(input: PaymentRequestWorkflowInput): Promise<void> {
      const context = Context.current();
      await issuePaymentRequest(em(), context.client, context.info.taskQueue, input);
    },
    async chargePaymentRequest(input: PaymentRequestChargeInput): Promise<PaymentRequestChargeOutcome> {
      Context.current().log.info('charging payment request', { idempotencyKey: input.idempotencyKey, amount: input.amount, currency: input.currency });
      return chargePaymentRequest(em(), processor, input);
    },
    async settlePendingPayment(transactionId: string, processorChargeId: string): Promise<string> {
      return settlePendingPayment(em(), processor, transactionId, processorChargeId);
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
