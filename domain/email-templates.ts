/**
 * Customer emails, as text and HTML. Each template takes plain values (already
 * formatted money and dates) and returns subject, text and html; everything
 * interpolated into HTML is escaped.
 */
import type { Brand } from './branding.ts';
import { dateTimeFormat } from './intl-formats.ts';

export interface RenderedEmail {
  subject: string;
  text: string;
  html: string;
}

export function escapeHtml(value: string): string {
  return value.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );
}

/** A date as customers read it: "March 31, 2027" (UTC, with the time when it matters). */
export function formatDate(instant: Date, withTime = false): string {
  return dateTimeFormat('en-US', {
    timeZone: 'UTC',
    year: 'numeric',
    month: 'long',
    day: 'numeric',
    ...(withTime ? { hour: '2-digit', minute: '2-digit', timeZoneName: 'short' } : {}),
  }).format(instant);
}

/**
 * One layout for every email: a heading, paragraphs, an optional button, the sender's name.
 * With the account's brand (domain/branding.ts): its logo and name on a band of its colour, and the button in it.
 */
function layout(
  from: string | Brand,
  heading: string,
  paragraphs: string[],
  action?: { label: string; url: string },
): string {
  const brand = typeof from === 'string' ? null : from;
  const name = typeof from === 'string' ? from : from.name;
  const color = brand?.color ?? '#1a56db';
  const onColor = brand?.onColor ?? '#fff';
  const button = action
    ? `<p style="margin:24px 0"><a href="${escapeHtml(action.url)}" style="background:${escapeHtml(color)};color:${escapeHtml(onColor)};padding:12px 20px;border-radius:6px;text-decoration:none;display:inline-block">${escapeHtml(action.label)}</a></p>`
    : '';
  const header = brand
    ? `<div style="background:${escapeHtml(brand.color)};color:${escapeHtml(brand.onColor)};border-radius:8px 8px 0 0;padding:16px 32px;font-weight:bold;font-size:18px">${
        brand.logoUrl
          ? `<img src="${escapeHtml(brand.logoUrl)}" alt="${escapeHtml(brand.name)}" height="32" style="height:32px;vertical-align:middle;margin-right:12px">`
          : ''
      }<span style="vertical-align:middle">${escapeHtml(brand.name)}</span></div>`
    : '';
  return `<!doctype html><html><body style="font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;color:#1f2937;background:#f3f4f6;padding:24px">
<div style="max-width:560px;margin:0 auto;background:#fff;border-radius:8px">${header}<div style="padding:32px">
<h1 style="font-size:20px;margin:0 0 16px">${escapeHtml(heading)}</h1>
${paragraphs.map((p) => `<p style="line-height:1.5">${escapeHtml(p)}</p>`).join('\n')}
${button}
<p style="color:#6b7280;font-size:13px;margin-top:32px">${escapeHtml(name)}</p>
</div></div></body></html>`;
}

export interface PaymentFailedEmail {
  accountName: string;
  /** The account's branding; without it, the plain layout. */
  brand?: Brand;
  customerName: string | null;
  amount: string;
  invoiceNumber: string;
  planName: string;
  reason: string;
  attempt: number;
  updateUrl: string;
  /** The customer portal (subscriptions, invoices, payment method), when the sender has one. */
  portalUrl?: string;
  /** The next automatic retry, or null when none is left. */
  nextRetryAt: Date | null;
  /** When the subscription ends (or pauses) unless paid, once retries are spent. */
  graceEndsAt: Date | null;
  finalAction: 'cancel' | 'pause';
}

export function paymentFailedEmail(e: PaymentFailedEmail): RenderedEmail {
  const greeting = `Hello${e.customerName ? ` ${e.customerName}` : ''},`;
  const what = `We could not collect ${e.amount} for invoice ${e.invoiceNumber} (${e.planName}) from ${e.accountName}.`;
  const reason = `Reason: ${e.reason}`;
  const next = e.nextRetryAt
    ? `We will try again on ${formatDate(e.nextRetryAt, true)}.`
    : `There are no more automatic retries. Unless the invoice is paid by ${formatDate(e.graceEndsAt!, true)}, your subscription will be ${e.finalAction === 'pause' ? 'paused' : 'canceled'}.`;
  const ask = 'Please update your billing details; we retry as soon as you do.';
  const paragraphs = [greeting, what, reason, next, ask];
  return {
    subject: `Payment failed for invoice ${e.invoiceNumber} (attempt ${e.attempt})`,
    text: `${paragraphs.join('\n\n')}\n\nUpdate your billing details: ${e.updateUrl}\n${e.portalUrl ? `Manage your subscription: ${e.portalUrl}\n` : ''}\n${e.accountName}\n`,
    html: layout(
      e.brand ?? e.accountName,
      'Your payment failed',
      e.portalUrl ? [...paragraphs, `Manage your subscription: ${e.portalUrl}`] : paragraphs,
      { label: 'Update billing details', url: e.updateUrl },
    ),
  };
}

export function paymentRecoveredEmail(e: {
  accountName: string;
  brand?: Brand;
  customerName: string | null;
  amount: string;
  invoiceNumber: string;
  pdfUrl?: string;
}): RenderedEmail {
  const paragraphs = [
    `Hello${e.customerName ? ` ${e.customerName}` : ''},`,
    `Thank you: ${e.amount} for invoice ${e.invoiceNumber} has been paid and your subscription is active again.`,
  ];
  return {
    subject: `Payment received for invoice ${e.invoiceNumber}`,
    text: `${paragraphs.join('\n\n')}${e.pdfUrl ? `\n\nYour invoice as a PDF: ${e.pdfUrl}` : ''}\n\n${e.accountName}\n`,
    html: layout(
      e.brand ?? e.accountName,
      'Payment received',
      paragraphs,
      e.pdfUrl ? { label: 'Download the invoice (PDF)', url: e.pdfUrl } : undefined,
    ),
  };
}

export function subscriptionEndedEmail(e: {
  accountName: string;
  brand?: Brand;
  customerName: string | null;
  planName: string;
  kind: 'canceled' | 'paused';
  reason: string | null;
}): RenderedEmail {
  const because = e.reason === 'payment_failed' ? ' because its payment could not be collected' : '';
  const paragraphs = [
    `Hello${e.customerName ? ` ${e.customerName}` : ''},`,
    `Your ${e.planName} subscription with ${e.accountName} has been ${e.kind}${because}.`,
    e.kind === 'paused'
      ? 'You will not be billed while it is paused. Contact us to resume it.'
      : 'You will not be billed again.',
  ];
  return {
    subject: `Your subscription has been ${e.kind}`,
    text: `${paragraphs.join('\n\n')}\n\n${e.accountName}\n`,
    html: layout(e.brand ?? e.accountName, `Subscription ${e.kind}`, paragraphs),
  };
}

/** The receipt for an invoice paid on its first attempt (a recovered payment has paymentRecoveredEmail instead). */
export function invoiceReceiptEmail(e: {
  accountName: string;
  brand?: Brand;
  customerName: string | null;
  amount: string;
  invoiceNumber: string;
  paidAt: Date;
  /** What was bought, one entry per invoice line: description, its period as people read it ("Jan 31, 2027 – Feb 28, 2027") and formatted amount. */
  lines: { description: string; period?: string; amount: string }[];
  /** The discount, taxes and balance rows after the lines ("VAT 19%: $27.36"), and the reverse-charge note; absent: none. */
  totals?: string[];
  pdfUrl: string;
  /** The customer portal, when the sender has one. */
  portalUrl?: string;
}): RenderedEmail {
  const paragraphs = [
    `Hello${e.customerName ? ` ${e.customerName}` : ''},`,
    `Thank you for your payment of ${e.amount} to ${e.accountName} on ${formatDate(e.paidAt)}.`,
    `Invoice ${e.invoiceNumber}:`,
    ...e.lines.map((line) => `${line.description}${line.period ? ` (${line.period})` : ''}: ${line.amount}`),
    ...(e.totals ?? []),
    `Total paid: ${e.amount}`,
  ];
  return {
    subject: `Receipt for invoice ${e.invoiceNumber} (${e.amount})`,
    text: `${paragraphs.join('\n\n')}\n\nYour invoice as a PDF: ${e.pdfUrl}\n${e.portalUrl ? `Manage your subscription: ${e.portalUrl}\n` : ''}\n${e.accountName}\n`,
    html: layout(
      e.brand ?? e.accountName,
      'Payment receipt',
      e.portalUrl ? [...paragraphs, `Manage your subscription: ${e.portalUrl}`] : paragraphs,
      { label: 'Download the invoice (PDF)', url: e.pdfUrl },
    ),
  };
}

/** To the account: its payout arrived. */
export function payoutPaidEmail(e: {
  accountName: string;
  amount: string;
  method: string;
  payoutId: string;
  paidAt: Date;
  description: string | null;
}): RenderedEmail {
  const methods: Record<string, string> = { bank_transfer: 'bank transfer', paypal: 'PayPal', wire: 'wire transfer' };
  const paragraphs = [
    `Hello ${e.accountName},`,
    `Your payout of ${e.amount} by ${methods[e.method] ?? e.method} was paid on ${formatDate(e.paidAt, true)}.`,
    ...(e.description ? [`Description: ${e.description}`] : []),
    `Payout: ${e.payoutId}`,
    'You can turn these emails off with PATCH /v1/settings/notifications {"payout_confirmations": false}.',
  ];
  return {
    subject: `Payout of ${e.amount} paid`,
    text: `${paragraphs.join('\n\n')}\n\nBilling engine\n`,
    html: layout('Billing engine', 'Payout paid', paragraphs),
  };
}

/** To the account: its payout failed and the money is back on its available balance. */
export function payoutFailedEmail(e: {
  accountName: string;
  amount: string;
  destination: string;
  payoutId: string;
  failureCode: string;
  failureMessage: string;
}): RenderedEmail {
  const paragraphs = [
    `Hello ${e.accountName},`,
    `Your payout of ${e.amount} to ${e.destination} failed: ${e.failureMessage} (${e.failureCode}).`,
    `The ${e.amount} are back on your available balance. Check the destination's details, or add another one, then pay out again.`,
    `Payout: ${e.payoutId}`,
    'You can turn these emails off with PATCH /v1/settings/notifications {"payout_confirmations": false}.',
  ];
  return {
    subject: `Payout of ${e.amount} failed`,
    text: `${paragraphs.join('\n\n')}\n\nBilling engine\n`,
    html: layout('Billing engine', 'Payout failed', paragraphs),
  };
}

/** To the account: a webhook endpoint kept failing and was disabled (sent by the webhooks delivery code). */
export function webhookEndpointDisabledEmail(e: {
  accountName: string;
  endpointId: string;
  url: string;
  /** The first failure of the run of failures that ended in disabling it. */
  failingSince: Date;
  disabledAt: Date;
  /** What the last attempt got: "HTTP 500", "timeout after 10 s", ... */
  lastError: string | null;
  livemode: boolean;
}): RenderedEmail {
  const paragraphs = [
    `Hello ${e.accountName},`,
    `Your ${e.livemode ? 'live' : 'sandbox'} webhook endpoint ${e.url} (${e.endpointId}) has failed every delivery since ${formatDate(e.failingSince, true)}, so it was disabled on ${formatDate(e.disabledAt, true)}.`,
    ...(e.lastError ? [`Last error: ${e.lastError}`] : []),
    'Events are still recorded: GET /v1/events lists them. Once the endpoint answers with a 2xx again, enable it with ' +
      `PATCH /v1/webhooks/${e.endpointId} {"enabled": true} and redeliver what it missed with POST /v1/events/{id}/redeliver.`,
  ];
  return {
    subject: `Webhook endpoint disabled: ${e.url}`,
    text: `${paragraphs.join('\n\n')}\n\nBilling engine\n`,
    html: layout('Billing engine', 'Webhook endpoint disabled', paragraphs),
  };
}

export function paymentRequestEmail(e: {
  accountName: string;
  brand?: Brand;
  amount: string;
  reference: string | null;
  link: string;
  expiresAt: Date;
}): RenderedEmail {
  const paragraphs = [
    `${e.accountName} requests a payment of ${e.amount}.`,
    ...(e.reference ? [`Reference: ${e.reference}`] : []),
    `This link works until ${formatDate(e.expiresAt, true)}.`,
  ];
  return {
    subject: `${e.accountName} requests ${e.amount}`,
    text: `${paragraphs.join('\n\n')}\n\nPay here: ${e.link}\n\n${e.accountName}\n`,
    html: layout(e.brand ?? e.accountName, `Payment request: ${e.amount}`, paragraphs, {
      label: `Pay ${e.amount}`,
      url: e.link,
    }),
  };
}

export function paymentRequestReceiptEmail(e: {
  accountName: string;
  brand?: Brand;
  amount: string;
  reference: string | null;
  paymentId: string;
  paidAt: Date | null;
  /** The receipt as a PDF (domain/payment-requests.ts receiptPdfUrl), as the invoice receipt links its invoice. */
  pdfUrl: string;
}): RenderedEmail {
  // The payer knows the request by its reference; the internal id only when it has none.
  const paragraphs = [
    `You paid ${e.amount} to ${e.accountName}.`,
    e.reference ? `Reference: ${e.reference}` : `Payment: ${e.paymentId}`,
    ...(e.paidAt ? [`Paid on ${formatDate(e.paidAt, true)}.`] : []),
  ];
  return {
    subject: `Receipt: ${e.amount} paid to ${e.accountName}`,
    text: `${paragraphs.join('\n\n')}\n\nYour receipt as a PDF: ${e.pdfUrl}\n\n${e.accountName}\n`,
    html: layout(e.brand ?? e.accountName, 'Receipt', paragraphs, {
      label: 'Download the receipt (PDF)',
      url: e.pdfUrl,
    }),
  };
}

/** To the customer: a credit note was issued for one of its invoices (services/credit-notes/delivery.ts). */
export function creditNoteEmail(e: {
  accountName: string;
  brand?: Brand;
  customerName: string | null;
  number: string;
  invoiceNumber: string;
  total: string;
  /** Where the money went, one sentence each ("$10.00 refunded to your payment method"). */
  outcomes: string[];
  memo: string | null;
  pdfUrl: string;
}): RenderedEmail {
  const paragraphs = [
    `Hello${e.customerName ? ` ${e.customerName}` : ''},`,
    `${e.accountName} issued credit note ${e.number} of ${e.total} for invoice ${e.invoiceNumber}.`,
    ...e.outcomes,
    ...(e.memo ? [e.memo] : []),
  ];
  return {
    subject: `Credit note ${e.number} for invoice ${e.invoiceNumber} (${e.total})`,
    text: `${paragraphs.join('\n\n')}\n\nYour credit note as a PDF: ${e.pdfUrl}\n\n${e.accountName}\n`,
    html: layout(e.brand ?? e.accountName, 'Credit note', paragraphs, {
      label: 'Download the credit note (PDF)',
      url: e.pdfUrl,
    }),
  };
}
