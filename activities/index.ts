import { Context } from '@temporalio/activity';

import type { OpenInvoiceCredit, OpenInvoiceCreditResult } from '../domain/credit-notes.ts';
import type { InvoiceEmailKind } from '../domain/one-off-invoices.ts';
import type { PaymentRequestSnapshot, RecurringPaymentRequestSnapshot } from '../domain/payment-requests.ts';
import type { SecretBox } from '../domain/secret-box.ts';
import type { SubscriptionSnapshot } from '../domain/subscription.ts';
import type { Resolver, WebhookUrlPolicy } from '../domain/webhook-url.ts';
import type { ServiceContext, WorkflowStartContext } from '../services/context.ts';
import { creditOpenInvoice } from '../services/credit-notes/owner.ts';
import { endDiscountAtEnd } from '../services/discounts/redemptions.ts';
import { type EmailInput, sendEmailOnce } from '../services/email/send-once.ts';
import { type ExportPruneResult, failExport, pruneExpiredExports } from '../services/exports/run.ts';
import type { ExportStorage } from '../services/exports/storage.ts';
import {
  type InvoiceState,
  invoiceState,
  type OpenedInvoice,
  openInvoice,
  type OpenInvoiceInput,
  settleInvoice,
  transitionInvoice,
} from '../services/invoices/cycle-invoices.ts';
import {
  type FinalizedInvoice,
  finalizeOneOffInvoice,
  markPaidOutOfBand,
  sendOneOffInvoiceEmail,
} from '../services/invoices/one-off.ts';
import {
  discountOpenInvoiceAnswer,
  type InvoiceDiscountRequest,
  type InvoiceDiscountResult,
} from '../services/invoices/promotion-codes.ts';
import {
  pruneExpiredRows,
  type PruneResult,
  reconcileMissingAvailability,
  reconcileMissingDiscountTimers,
  reconcileOrphanedFunds,
  type ReconcileResult,
  reconcileStuckPayments,
  reconcileStuckPayouts,
} from '../services/maintenance/sweeps.ts';
import { claimPendingFunds, type PendingFunds } from '../services/money/balances.ts';
import { chargeCustomer, type ChargeInput, type ChargeOutcome } from '../services/money/charges.ts';
import { makeFundsAvailable } from '../services/money/ledger.ts';
import { settlePendingPayment } from '../services/money/payments.ts';
import {
  allocatePaymentRequest,
  chargePaymentRequest,
  type CheckoutPaymentInput,
  issuePaymentRequest,
  type PaymentRequestChargeInput,
  type PaymentRequestChargeOutcome,
  projectPaymentRequest,
  projectRecurringPaymentRequest,
  recordCheckoutPayment,
} from '../services/payment-requests/projection.ts';
import {
  completePayout,
  createSandboxPayoutRail,
  notifyPayoutPaid,
  type PayoutRail,
  settlePayout,
  submitPayout,
  type SubmitResult,
} from '../services/payouts/rail.ts';
import { nextScheduledPayout, runScheduledPayouts, type ScheduledRunResult } from '../services/payouts/schedule.ts';
import { type Processors, sandboxProcessors } from '../services/processors/index.ts';
import {
  type BillingSettings,
  loadBillingSettings,
  type NotifyContext,
  notifyPaymentFailed,
  notifyPaymentRecovered,
  notifySubscriptionEnded,
  sendInvoiceReceipt,
  settleInvoiceWithoutCharge,
} from '../services/subscriptions/billing-notices.ts';
import { projectSubscription } from '../services/subscriptions/projection.ts';
import { renewCycle, type RenewCycleInput, type RenewCycleResult } from '../services/subscriptions/renew-cycle.ts';
import { sweepOrphanedSubscriptions, type SweepResult } from '../services/subscriptions/watch.ts';
import {
  deleteExpiredTestClocks,
  recordTestClockAdvanced,
  reportToClock,
  tickClockWorkflows,
} from '../services/test-clocks/clocks.ts';
import { currentTestClock } from '../services/test-clocks/now.ts';
import { maintainUsagePartitions, type PartitionMaintenance } from '../services/usage/partitions.ts';
import { usageStoreFor } from '../services/usage/postgres-store.ts';
import { resignalThresholdCrossings, type ThresholdResignalResult } from '../services/usage/threshold-signals.ts';
import {
  type AttemptInput,
  type AttemptOutcome,
  attemptWebhookDelivery,
  finishWebhookDelivery,
  webhookDisabledEmail,
} from '../services/webhooks/delivery.ts';
import { awaitClockEventsDispatched, type DispatchResult } from '../services/webhooks/dispatch.ts';
import type { ClockReport, ClockTick } from '../workflows/clock-sleep.ts';
import type { PaymentRequestWorkflowInput } from '../workflows/payment-request.ts';
import { createExportActivities } from './export.ts';
import { createTestClockActivities } from './test-clocks.ts';
import { createUsageActivities } from './usage.ts';
import { dispatchEventsActivity, temporalNow } from './webhooks.ts';

/**
 * What the activities reach. The services are the worker's ServiceContext's (services/compose.ts, the one composition
 * worker.ts makes): its database, mailer and customer links, and its processors (the sandbox for both modes when unset:
 * tests that build activities without a context). Not its Temporal part: an activity starts and signals work with its
 * own client and task queue (Context.current()), so that work of a workflow on the test clock queue stays on it
 * (services/test-clocks/binding.ts). The rest are the worker's options the context does not hold.
 */
export interface ActivityDeps
  extends Pick<ServiceContext, 'orm' | 'mailer' | 'links'>, Partial<Pick<ServiceContext, 'processors'>> {
  /** Opens webhook signing secrets (sealed with a key from AUTH_SECRET); without it webhook attempts fail. */
  secretBox?: SecretBox;
  /** DNS for webhook urls; the system's by default. */
  webhookResolver?: Resolver;
  /** Where sandbox webhook endpoints may point: the configuration's (config.webhookUrlPolicy), the rule the API checks at creation. */
  urlPolicy?: WebhookUrlPolicy;
  /** Where payouts go; defaults to the sandbox rail (services/payouts/rail.ts). */
  payoutRail?: PayoutRail;
  /** Where export files are written (services/exports/storage.ts); exports fail without it. */
  exportStorage?: ExportStorage;
  /**
   * RENEWAL_SPREAD_MINUTES as this worker has it now (config.ts): each renewal hands it to its
   * subscription workflow, which spreads its next renewals with it (docs/scaling.md#renewal-spreading).
   * Unset: renewals hand nothing, and a subscription keeps the window it was created with.
   */
  renewalSpreadMinutes?: () => number;
  /** USAGE_RETENTION_DAYS (config.usageRetentionDays): how long the maintenance keeps meter events (default 400). */
  usageRetentionDays?: number;
}

/** The running activity's Temporal client and task queue, as a service takes them (services/context.ts). */
const activityContext = (context: Context): WorkflowStartContext => ({
  temporal: { client: context.client, taskQueue: context.info.taskQueue },
});

/**
 * Every side effect the workflows can ask for. Built by a factory so the worker
 * wires real dependencies and tests can wrap them (a crashing processor, say).
 * Each call works on its own fork of the entity manager.
 */
export function createActivities(deps: ActivityDeps) {
  const em = () => deps.orm.em.fork();
  const processors: Processors = deps.processors ?? sandboxProcessors(em);
  // Emails of a mode that moves no real money say [TEST] (services/email/send-once.ts).
  const notify: NotifyContext = { mailer: deps.mailer, links: deps.links, processors };
  /** The running activity's Temporal client and task queue: availability workflows of the money it records start there. */
  const activityTemporal = (): WorkflowStartContext['temporal'] | undefined => {
    try {
      const context = Context.current();
      return context.client ? { client: context.client, taskQueue: context.info.taskQueue } : undefined;
    } catch {
      return undefined; // called outside an activity (a test): the maintenance reconciler starts them
    }
  };
  return {
    /** The test clock workflow reached its time (ready), or failed on the way (internal_failure). */
    async testClockAdvanced(input: { clockId: string; frozenTime: string; failure: string | null }): Promise<void> {
      await recordTestClockAdvanced(em(), input);
    },
    /** The clock workflow's tick to the workflows on it (direct signals); returns the ids of workflows that no longer exist. */
    async tickClockWorkflows(input: { ids: string[]; tick: ClockTick; concurrency?: number }): Promise<string[]> {
      return tickClockWorkflows(Context.current().client, input.ids, input.tick, input.concurrency);
    },
    /** A workflow on a clock reports to it (into the clock's table, or a direct signal to a clock without one). */
    async reportToClock(input: { clockId: string; report: ClockReport }): Promise<void> {
      await reportToClock(Context.current().client, input.clockId, input.report, em());
    },
    /** Between two instants of a test clock: the events recorded on it handed to the webhook dispatcher (returns how many are left after `timeoutMs`, and whether a delivery may have been registered on the clock). */
    async awaitClockEventsDispatched(input: {
      clockId: string;
      timeoutMs: number;
    }): Promise<{ left: number; bound: boolean }> {
      const context = Context.current();
      return awaitClockEventsDispatched(
        em(),
        { client: context.client, taskQueue: context.info.taskQueue },
        input.clockId,
        input.timeoutMs,
      );
    },
    /** Maintenance: test clocks past their `deletes_after` are deleted with everything on them. */
    async deleteExpiredTestClocks(): Promise<{ deleted: number }> {
      return { deleted: await deleteExpiredTestClocks({ temporal: { client: Context.current().client } }, em()) };
    },
    async projectSubscription(snapshot: SubscriptionSnapshot): Promise<void> {
      await projectSubscription(em(), snapshot);
    },
    /**
     * A due billing cycle in one call (run as a local activity): invoice, first charge, settle,
     * projection and receipt, each step idempotent (services/subscriptions/renew-cycle.ts). A decline comes back
     * unpaid, with nothing projected.
     */
    async renewCycle(input: RenewCycleInput): Promise<RenewCycleResult & { renewalSpreadMinutes?: number }> {
      const result = await renewCycle(em, { ...notify, temporal: activityTemporal() }, input);
      // The deployment's window now, for the workflow's next renewals (it may differ from the one it was created with).
      return deps.renewalSpreadMinutes ? { ...result, renewalSpreadMinutes: deps.renewalSpreadMinutes() } : result;
    },
    async openInvoice(input: OpenInvoiceInput): Promise<OpenedInvoice> {
      return openInvoice(em(), deps.links, input);
    },
    /**
     * `ownFunds` (a subscription workflow's dunning retry or upgrade, patch `funds-of-charges`): the money
     * stays pending owned by the calling workflow, which makes it available on its own timer, so no
     * fundsAvailabilityWorkflow is started; returned as `funds` (claimed again by a retry).
     */
    async charge(
      input: ChargeInput,
      options: { ownFunds?: boolean } = {},
    ): Promise<ChargeOutcome & { funds?: PendingFunds[] }> {
      Context.current().log.info('charging', {
        idempotencyKey: input.idempotencyKey,
        amount: input.amount,
        currency: input.currency,
      });
      const charging = { processors, links: deps.links, temporal: activityTemporal() };
      if (!options.ownFunds) return chargeCustomer(charging, em(), input);
      const outcome = await chargeCustomer(charging, em(), input, {
        fundsOwnedByWorkflow: true,
      });
      if (outcome.status !== 'succeeded' || !outcome.transactionId) return outcome;
      return { ...outcome, funds: await claimPendingFunds(em(), outcome.transactionId) };
    },
    /**
     * `paidAt`: the workflow's time of payment (optional; see settleInvoice). Then the
     * receipt email (an invoice paid on its first attempt); a retry after a failed send
     * finds the invoice paid already and only sends.
     */
    async settleInvoice(invoiceId: string, charge: ChargeOutcome, paidAt?: string): Promise<void> {
      await settleInvoice(em(), deps.links, invoiceId, charge, paidAt);
      if (charge.status === 'succeeded') await sendInvoiceReceipt(em(), notify, invoiceId);
    },
    /** For dunning: whether the invoice is still open (it may have been voided, marked uncollectible or paid meanwhile). */
    async getInvoice(invoiceId: string): Promise<InvoiceState> {
      return invoiceState(em(), invoiceId);
    },
    /** Voids an open or uncollectible invoice (e.g. when its subscription is canceled). Returns the resulting state either way. */
    async voidInvoice(invoiceId: string, at: string): Promise<InvoiceState> {
      await transitionInvoice(em(), deps.links, invoiceId, 'void', new Date(at));
      return invoiceState(em(), invoiceId);
    },
    /** A credit note on an open invoice, by the workflow that owns it (services/credit-notes/owner.ts); a refusal is answered, not retried. */
    async creditOpenInvoice(credit: OpenInvoiceCredit, at: string): Promise<OpenInvoiceCreditResult> {
      return creditOpenInvoice(em(), deps.links, credit, at);
    },
    /** A promotion code or coupon on an open one-off invoice (services/invoices/promotion-codes.ts), from its invoice workflow; idempotent by the discount id. */
    async discountOpenInvoice(request: InvoiceDiscountRequest, at: string): Promise<InvoiceDiscountResult> {
      return discountOpenInvoiceAnswer(em(), deps.links, request, at);
    },
    /** Marks an open invoice uncollectible (e.g. when dunning gives up). Returns the resulting state either way. */
    async markInvoiceUncollectible(invoiceId: string, at: string): Promise<InvoiceState> {
      await transitionInvoice(em(), deps.links, invoiceId, 'uncollectible', new Date(at));
      return invoiceState(em(), invoiceId);
    },
    /** One-off invoices (workflows/invoice.ts): finalizes the draft at the workflow's time (idempotent). */
    async finalizeOneOffInvoice(invoiceId: string, at: string): Promise<FinalizedInvoice | { refused: string }> {
      return finalizeOneOffInvoice(em(), deps.links, invoiceId, at);
    },
    async markInvoicePaidOutOfBand(invoiceId: string, at: string): Promise<boolean> {
      return markPaidOutOfBand(em(), deps.links, invoiceId, at);
    },
    /** A send_invoice invoice's email (at finalize) or reminder, once per kind. */
    async sendOneOffInvoiceEmail(input: {
      invoiceId: string;
      kind: InvoiceEmailKind;
      payUrl: string;
    }): Promise<boolean> {
      return sendOneOffInvoiceEmail(em(), { mailer: deps.mailer, links: deps.links, processors }, input);
    },
    async settleInvoiceWithoutCharge(invoiceId: string, paidAt: string): Promise<void> {
      await settleInvoiceWithoutCharge(em(), deps.links, invoiceId, paidAt);
    },
    /**
     * The billing settings of the subscription's mode. `livemode` is undefined only for a call a
     * workflow scheduled before settings were per mode: those read live's (what every mode had then).
     */
    async loadBillingSettings(accountId: string, livemode?: boolean): Promise<BillingSettings> {
      return loadBillingSettings(em(), accountId, livemode ?? true);
    },
    async notifyPaymentFailed(input: { subscription: SubscriptionSnapshot; attempt: number }): Promise<void> {
      await notifyPaymentFailed(em(), notify, input.subscription, input.attempt);
    },
    async notifyPaymentRecovered(input: { subscription: SubscriptionSnapshot; invoiceId: string }): Promise<void> {
      await notifyPaymentRecovered(em(), notify, input.subscription, input.invoiceId);
    },
    async notifySubscriptionEnded(input: {
      subscription: SubscriptionSnapshot;
      kind: 'canceled' | 'paused';
    }): Promise<void> {
      await notifySubscriptionEnded(em(), notify, input.subscription, input.kind);
    },
    async sendEmail(input: EmailInput): Promise<{ sent: boolean; messageId: string }> {
      return sendEmailOnce(em(), deps.mailer, input, processors);
    },
    /** The webhook dispatcher's pass: undispatched events → first attempts, and delivery workflows for those that failed (activities/webhooks.ts). */
    async dispatchWebhookEvents(limit: number): Promise<DispatchResult> {
      return dispatchEventsActivity(
        em(),
        { secretBox: deps.secretBox, resolver: deps.webhookResolver, urlPolicy: deps.urlPolicy },
        limit,
      );
    },
    /** One HTTP attempt of a webhook delivery, recorded. */
    async attemptWebhookDelivery(input: AttemptInput): Promise<AttemptOutcome> {
      return attemptWebhookDelivery(
        em(),
        { secretBox: deps.secretBox, resolver: deps.webhookResolver, urlPolicy: deps.urlPolicy, temporalNow },
        input,
      );
    },
    async finishWebhookDelivery(input: { deliveryId: string; at: string }): Promise<void> {
      await finishWebhookDelivery(em(), input);
    },
    async webhookDisabledEmail(input: { endpointId: string; disabledAt: string }): Promise<EmailInput | null> {
      return webhookDisabledEmail(em(), input);
    },
    /** A new payment request's id and link secret (random: an activity, so a replay reads the recorded result). */
    async allocatePaymentRequest(): Promise<{ id: string; token: string }> {
      return allocatePaymentRequest();
    },
    async projectPaymentRequest(snapshot: PaymentRequestSnapshot): Promise<void> {
      await projectPaymentRequest(em(), snapshot, deps.links);
    },
    async projectRecurringPaymentRequest(snapshot: RecurringPaymentRequestSnapshot): Promise<void> {
      await projectRecurringPaymentRequest(em(), snapshot);
    },
    /** Starts a payment request's own workflow (for a recurring request) and waits until it has recorded itself. */
    async issuePaymentRequest(input: PaymentRequestWorkflowInput): Promise<void> {
      await issuePaymentRequest(activityContext(Context.current()), em(), input);
    },
    async chargePaymentRequest(input: PaymentRequestChargeInput): Promise<PaymentRequestChargeOutcome> {
      Context.current().log.info('charging payment request', {
        idempotencyKey: input.idempotencyKey,
        amount: input.amount,
        currency: input.currency,
      });
      return chargePaymentRequest({ processors, temporal: activityTemporal() }, em(), input);
    },
    /** A hosted checkout paid a request: its payment transaction, once per processor charge. */
    async recordCheckoutPayment(input: CheckoutPaymentInput): Promise<string> {
      return recordCheckoutPayment({ processors, temporal: activityTemporal() }, em(), input, { markPaid: true });
    },
    async settlePendingPayment(transactionId: string, processorChargeId: string): Promise<string> {
      return settlePendingPayment({ processors, temporal: activityTemporal() }, em(), transactionId, processorChargeId);
    },
    // writeExport: also what a dedicated exports worker runs alone (export-worker.ts).
    ...createExportActivities({ orm: deps.orm, exportStorage: deps.exportStorage, isTestMode: processors.isTestMode }),
    ...createUsageActivities({ orm: deps.orm }),
    ...createTestClockActivities({ orm: deps.orm }),
    /** An export whose writing failed for good: status failed and its event. */
    async failExport(exportId: string, message: string): Promise<void> {
      await failExport(em(), exportId, message);
    },
    /** Sends a pending payout through the rail and records paid or failed (workflows started before payouts had states). */
    async completePayout(payoutId: string): Promise<string> {
      return completePayout(em(), deps.payoutRail ?? createSandboxPayoutRail(em()), payoutId);
    },
    /**
     * A payout's pending time is over (at: the workflow's clock): held, or in transit with its arrival date.
     * `notBeforeMs`: the end of its cancelable time on the workflow's clock; woken before it, it stays pending.
     */
    async submitPayout(payoutId: string, atMs: number, notBeforeMs?: number): Promise<SubmitResult> {
      return submitPayout(
        em(),
        deps.payoutRail ?? createSandboxPayoutRail(em()),
        payoutId,
        new Date(atMs),
        notBeforeMs === undefined ? undefined : new Date(notBeforeMs),
      );
    },
    /** A payout in transit arrives: paid or failed (with its events and balance transaction). */
    async settlePayout(payoutId: string, atMs: number): Promise<string> {
      return settlePayout(em(), deps.payoutRail ?? createSandboxPayoutRail(em()), payoutId, new Date(atMs));
    },
    /** payoutScheduleWorkflow: the next run of the account's payout schedules after atMs, and what it will do. */
    async nextScheduledPayout(
      accountId: string,
      livemode: boolean,
      atMs: number,
    ): Promise<{ nextMs: number | null; summary: string }> {
      // A clock's schedule (its activities run on the clock): the clock's own schedules.
      return nextScheduledPayout(em(), { accountId, livemode, testClockId: currentTestClock()?.id }, atMs);
    },
    /** payoutScheduleWorkflow: one run, paying out each due currency's available balance (idempotent per run). */
    async runScheduledPayouts(accountId: string, livemode: boolean, runAtMs: number): Promise<ScheduledRunResult[]> {
      const context = Context.current();
      return runScheduledPayouts(
        em(),
        { client: context.client, taskQueue: context.info.taskQueue },
        { accountId, livemode, testClockId: currentTestClock()?.id },
        runAtMs,
      );
    },
    /** The payout confirmation (paid) or failure email, once, if the account wants it. */
    async notifyPayoutPaid(payoutId: string): Promise<void> {
      await notifyPayoutPaid({ mailer: deps.mailer, processors }, em(), payoutId);
    },
    /** Maintenance (workflows/maintenance.ts): pending payments with no settlement workflow, carried on as the API would have. */
    async reconcileStuckPayments(olderThanMs: number): Promise<ReconcileResult> {
      const context = Context.current();
      return reconcileStuckPayments({ processors, ...activityContext(context) }, em(), olderThanMs, context.log);
    },
    /** fundsAvailabilityWorkflow: a pending balance transaction's money becomes available (once; false when it no longer was pending). */
    async makeFundsAvailable(balanceTransactionId: string): Promise<boolean> {
      return makeFundsAvailable(em(), balanceTransactionId);
    },
    /** A subscription's repeating discount reached its end (the workflow's timer): it ends, with customer.discount.deleted; false when something ended it before. */
    async endDiscountAtEnd(discountId: string): Promise<boolean> {
      return em().transactional((tx) => endDiscountAtEnd(tx, discountId));
    },
    /** Maintenance: pending balance transactions with no availability workflow get one. */
    async reconcileMissingAvailability(olderThanMs: number): Promise<ReconcileResult> {
      const context = Context.current();
      return reconcileMissingAvailability(activityContext(context), em(), olderThanMs, context.log);
    },
    /** Maintenance: customers' repeating discounts of the last hour whose end timer never started get one. */
    async reconcileMissingDiscountTimers(olderThanMs: number): Promise<ReconcileResult> {
      const context = Context.current();
      return reconcileMissingDiscountTimers(activityContext(context), em(), olderThanMs, context.log);
    },
    /** Maintenance: pending payouts with no payoutWorkflow get one. */
    async reconcileStuckPayouts(olderThanMs: number): Promise<ReconcileResult> {
      const context = Context.current();
      return reconcileStuckPayouts(activityContext(context), em(), olderThanMs, context.log);
    },
    /** Maintenance: pending money owned by a workflow that no longer runs (terminated), made available once due. */
    async reconcileOrphanedFunds(olderThanMs: number): Promise<ReconcileResult> {
      const context = Context.current();
      return reconcileOrphanedFunds(activityContext(context), em(), olderThanMs, context.log);
    },
    /** Maintenance: the next batch of live subscriptions whose workflow closed without ending them (services/subscriptions/watch.ts). */
    async sweepOrphanedSubscriptions(input: { after: string | null; limit: number }): Promise<SweepResult> {
      const context = Context.current();
      return sweepOrphanedSubscriptions(em(), context.client, input.after, input.limit, context.log);
    },
    /** Maintenance: the files of expired exports, and temporary files of writers that died (services/exports/run.ts). */
    async pruneExpiredExports(): Promise<ExportPruneResult> {
      if (!deps.exportStorage) return { files: 0, temporary: 0 };
      return pruneExpiredExports(em(), deps.exportStorage);
    },
    /** Maintenance: the meter events' monthly partitions, and dropping months past USAGE_RETENTION_DAYS (services/usage/partitions.ts). */
    async maintainUsagePartitions(): Promise<PartitionMaintenance> {
      return maintainUsagePartitions(usageStoreFor(deps.orm).pool, undefined, deps.usageRetentionDays);
    },
    /** Maintenance: threshold crossings claimed but never acknowledged by their workflow (a crash before the signal), signalled again (services/usage/threshold-signals.ts). */
    async resignalThresholdCrossings(olderThanMs: number): Promise<ThresholdResignalResult> {
      const context = Context.current();
      return resignalThresholdCrossings(
        { orm: deps.orm, temporal: { client: context.client } },
        olderThanMs,
        context.log,
      );
    },
    /** Maintenance: expired idempotency keys, and login attempts older than the throttle window. */
    async pruneExpiredRows(loginThrottleWindowSeconds: number): Promise<PruneResult> {
      return pruneExpiredRows(em(), loginThrottleWindowSeconds);
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
