import type { EntityManager } from '@mikro-orm/postgresql';

import { Account, Customer, Invoice, Plan } from '../../db/entities/index.ts';
import { brandOf } from '../../domain/branding.ts';
import {
  invoiceReceiptEmail,
  paymentFailedEmail,
  paymentRecoveredEmail,
  type RenderedEmail,
  subscriptionEndedEmail,
} from '../../domain/email-templates.ts';
import { adjustmentRows, lineAmount, reverseChargeNote } from '../../domain/invoice-lines.ts';
import { formatPeriod, humanizeInstants } from '../../domain/locale.ts';
import { formatMoney } from '../../domain/money.ts';
import type { SubscriptionSnapshot } from '../../domain/subscription.ts';
import { type BillingSettings, loadModeSettings } from '../accounts/mode-settings.ts';
import type { ServiceContext } from '../context.ts';
import { sendEmailOnce } from '../email/send-once.ts';
import { type InvoiceLinks, recordInvoiceEvents } from '../invoices/events.ts';
import { pdfAdjustments } from '../invoices/pdf.ts';
import { dunningSteps } from '../observability/metrics.ts';
import { currentTime } from '../test-clocks/now.ts';

export type { BillingSettings } from '../accounts/mode-settings.ts';

/**
 * The dunning settings of the account in the subscription's mode (live or sandbox), with
 * SPEC.md's defaults where it set none. Read when dunning starts.
 */
export async function loadBillingSettings(
  em: EntityManager,
  accountId: string,
  livemode: boolean,
): Promise<BillingSettings> {
  return (await loadModeSettings(em, accountId, livemode)).billing;
}

/** Marks an invoice with nothing to pay (a credit covered it) as paid, with its `invoice.paid` event (once). */
export async function settleInvoiceWithoutCharge(
  em: EntityManager,
  links: InvoiceLinks,
  invoiceId: string,
  paidAt: string,
): Promise<void> {
  await em.transactional(async (tx) => {
    const changed = await tx.nativeUpdate(
      Invoice,
      { id: invoiceId, status: 'open', amountDue: 0 },
      { status: 'paid', paidAt: new Date(paidAt) },
    );
    if (changed > 0)
      await recordInvoiceEvents(tx, links, await tx.findOneOrFail(Invoice, { id: invoiceId }, { refresh: true }), [
        'invoice.paid',
      ]);
  });
}

/**
 * What a customer email of a subscription reaches: the mailer, the links it carries, and the processors, whose
 * test-mode rule marks emails of a mode that moves no real money with [TEST] (services/email/send-once.ts).
 */
export type NotifyContext = Pick<ServiceContext, 'mailer' | 'links' | 'processors'>;

async function parties(em: EntityManager, subscription: SubscriptionSnapshot) {
  const [account, customer, plan] = await Promise.all([
    em.findOneOrFail(Account, { id: subscription.accountId }),
    em.findOneOrFail(Customer, { id: subscription.customerId }),
    em.findOne(Plan, { id: subscription.planId }),
  ]);
  return { account, customer, planName: plan?.name ?? subscription.planId };
}

/** The name customers know the account by, and its branding for the email's layout (domain/branding.ts). */
function sender(account: Account, ctx: NotifyContext) {
  const brand = brandOf(account, ctx.links.publicUrl);
  return { accountName: brand.name, ...(account.settings.branding ? { brand } : {}) };
}

/**
 * Sends `email` once (keyed `mail.dedupeKey`) from the account: under the name customers know it by, marked [TEST]
 * when `mail.livemode`'s mode moves no real money (services/email/send-once.ts).
 */
async function emailFromAccountOnce(
  em: EntityManager,
  ctx: NotifyContext,
  account: Account,
  mail: { dedupeKey: string; to: string; livemode: boolean },
  email: RenderedEmail,
): Promise<void> {
  await sendEmailOnce(
    em,
    ctx.mailer,
    { ...mail, accountId: account.id, fromName: brandOf(account, '').name, ...email },
    ctx.processors,
  );
}

/**
 * Emails the customer about failed attempt `attempt` of the subscription's unpaid
 * invoice: the reason, a link to update billing details, and the next retry date
 * (or when the grace period ends). Sent once per (invoice, attempt), unless the
 * account turned `failed_payments` notifications off in the subscription's mode.
 */
export async function notifyPaymentFailed(
  em: EntityManager,
  ctx: NotifyContext,
  subscription: SubscriptionSnapshot,
  attempt: number,
): Promise<void> {
  const dunning = subscription.dunning;
  if (!dunning) return;
  dunningSteps.inc({ step: attempt <= 1 ? 'started' : 'retry_failed' });
  const { account, customer, planName } = await parties(em, subscription);
  if (!(await loadModeSettings(em, account.id, subscription.livemode)).notifications.failed_payments) return;
  const updateUrl = await ctx.links.billingDetailsUrl({
    customerId: customer.id,
    accountId: account.id,
    livemode: subscription.livemode,
  });
  const email = paymentFailedEmail({
    ...sender(account, ctx),
    customerName: customer.name ?? null,
    amount: formatMoney(dunning.amount, dunning.currency),
    invoiceNumber: dunning.invoiceNumber,
    planName,
    reason: dunning.lastFailureMessage,
    attempt,
    updateUrl,
    portalUrl: (
      await ctx.links.portalUrl({ customerId: customer.id, accountId: account.id, livemode: subscription.livemode })
    ).url,
    nextRetryAt: dunning.nextRetryAt ? new Date(dunning.nextRetryAt) : null,
    graceEndsAt: dunning.graceEndsAt ? new Date(dunning.graceEndsAt) : null,
    finalAction: dunning.finalAction,
  });
  await emailFromAccountOnce(
    em,
    ctx,
    account,
    {
      dedupeKey: `${dunning.invoiceId}:payment_failed:attempt:${attempt}`,
      to: customer.email,
      livemode: subscription.livemode,
    },
    email,
  );
}

export async function notifyPaymentRecovered(
  em: EntityManager,
  ctx: NotifyContext,
  subscription: SubscriptionSnapshot,
  invoiceId: string,
): Promise<void> {
  dunningSteps.inc({ step: 'recovered' });
  const { account, customer } = await parties(em, subscription);
  const invoice = await em.findOneOrFail(Invoice, { id: invoiceId });
  const email = paymentRecoveredEmail({
    ...sender(account, ctx),
    customerName: customer.name ?? null,
    amount: formatMoney(invoice.amountPaid, invoice.currency),
    invoiceNumber: invoice.number,
    pdfUrl: ctx.links.invoicePdfUrl(invoice.id),
  });
  await emailFromAccountOnce(
    em,
    ctx,
    account,
    { dedupeKey: `${invoiceId}:payment_recovered`, to: customer.email, livemode: subscription.livemode },
    email,
  );
}

/** The subscription canceled (or paused by dunning) email, unless the account turned `subscription_cancellations` off in the subscription's mode. */
export async function notifySubscriptionEnded(
  em: EntityManager,
  ctx: NotifyContext,
  subscription: SubscriptionSnapshot,
  kind: 'canceled' | 'paused',
): Promise<void> {
  if ((kind === 'canceled' ? subscription.endedReason : subscription.pauseReason) === 'payment_failed')
    dunningSteps.inc({ step: `ended_${kind}` });
  const { account, customer, planName } = await parties(em, subscription);
  if (!(await loadModeSettings(em, account.id, subscription.livemode)).notifications.subscription_cancellations) return;
  const reason = kind === 'canceled' ? subscription.endedReason : subscription.pauseReason;
  const email = subscriptionEndedEmail({
    ...sender(account, ctx),
    customerName: customer.name ?? null,
    planName,
    kind,
    reason,
  });
  await emailFromAccountOnce(
    em,
    ctx,
    account,
    {
      dedupeKey: `${subscription.id}:${kind}:v${subscription.version}`,
      to: customer.email,
      livemode: subscription.livemode,
    },
    email,
  );
}

/**
 * The receipt for a subscription invoice paid on its first attempt, to the
 * customer it was issued to, with the signed PDF link; once per invoice. An
 * invoice paid after failed attempts gets paymentRecoveredEmail from the
 * workflow instead, and one that cost nothing (a credit covered it) gets none.
 */
export async function sendInvoiceReceipt(
  em: EntityManager,
  ctx: NotifyContext,
  invoiceId: string,
  /** The paid invoice, its account and customer, when the caller has just written or read them (renewCycle). */
  loaded?: { invoice: Invoice; account: Account; customer: Customer | null },
): Promise<void> {
  const invoice = loaded?.invoice ?? (await em.findOneOrFail(Invoice, { id: invoiceId }));
  if (invoice.status !== 'paid' || invoice.amountPaid <= 0 || invoice.attemptCount > 1) return;
  const [account, customer] = loaded
    ? [loaded.account, loaded.customer]
    : await Promise.all([
        em.findOneOrFail(Account, { id: invoice.accountId }),
        em.findOne(Customer, { id: invoice.customerId }),
      ]);
  const to = invoice.customerEmail ?? customer?.email;
  if (!to) return;
  const money = (amount: number) => formatMoney(amount, invoice.currency);
  const dateStyle = { timeZone: account.settings.timezone, locale: account.settings.language };
  const email = invoiceReceiptEmail({
    ...sender(account, ctx),
    customerName: invoice.customerName ?? customer?.name ?? null,
    amount: money(invoice.amountPaid),
    invoiceNumber: invoice.number,
    paidAt: invoice.paidAt ?? currentTime(),
    lines: invoice.lines.map((line) => ({
      description: humanizeInstants(line.description, dateStyle),
      period: formatPeriod(new Date(line.period_start), new Date(line.period_end), dateStyle),
      amount: money(lineAmount(line)),
    })),
    totals: receiptTotals(invoice, money),
    pdfUrl: ctx.links.invoicePdfUrl(invoice.id),
    portalUrl: customer
      ? (await ctx.links.portalUrl({ customerId: customer.id, accountId: account.id, livemode: invoice.livemode })).url
      : undefined,
  });
  await sendEmailOnce(
    em,
    ctx.mailer,
    {
      dedupeKey: `${invoice.id}:receipt`,
      accountId: account.id,
      fromName: brandOf(account, '').name,
      to,
      livemode: invoice.livemode,
      ...email,
    },
    ctx.processors,
  );
}

/** The receipt's rows after the lines: discount, taxes, the total and the balance applied, as the PDF prints them. */
function receiptTotals(invoice: Invoice, money: (amount: number) => string): string[] {
  const adjustments = pdfAdjustments(invoice);
  const rows = adjustmentRows({ total: Number(invoice.total), ...adjustments }, money);
  if (rows.beforeTotal.length === 0 && rows.afterTotal.length === 0 && !adjustments.reverseCharge) return [];
  return [
    ...rows.beforeTotal.map((row) => `${row.label}: ${row.value}`),
    `Total: ${money(Number(invoice.total))}`,
    ...rows.afterTotal.map((row) => `${row.label}: ${row.value}`),
    ...(adjustments.reverseCharge ? [reverseChargeNote] : []),
  ];
}
