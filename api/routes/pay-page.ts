/**
 * The hosted pay page at `payment_url` (`/pay/<token>`): server-rendered HTML and
 * CSS, outside /v1 (no API credentials: the 256-bit token in the link is the
 * credential), working without JavaScript (one inline line disables the button
 * while the form is sent). Submitting sends the `pay` update to the request's
 * workflow, which charges once; the page shows the receipt, or the decline with
 * the form again.
 *
 * Each rendered form carries a fresh attempt nonce: the workflow answers a
 * replayed form (double click, refresh, resubmission) with the first result and
 * never charges again. In a mode on Stripe (docs/processors.md) the page sends a
 * payable request to its Stripe Checkout Session (303) instead of the test-card form.
 * Every value shown is escaped (hono/html); each page sends
 * its own Content-Security-Policy with a per-response nonce for its style and
 * script, `form-action 'self'` and no framing.
 */
import { randomBytes } from 'node:crypto';

import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { type Context, Hono } from 'hono';
import { html } from 'hono/html';

import { Account, PaymentRequest } from '../../db/entities/index.ts';
import { brandOf } from '../../domain/branding.ts';
import { formatMoney } from '../../domain/money.ts';
import { isPayPageMethod, payPageMethods, type PayResult, tokenPattern } from '../../domain/payment-requests.ts';
import { renderReceiptPdf } from '../../domain/receipt-pdf.ts';
import { loadLogo } from '../../services/accounts/branding.ts';
import { pdfFonts } from '../../services/invoices/pdf.ts';
import { payUpdate } from '../../workflows/payment-request.ts';
import type { AppDeps } from '../deps.ts';
import { type Html, isCrossSitePost, page, stateCard } from '../pages/layout.ts';

interface View {
  request: PaymentRequest;
  account: Pick<Account, 'id' | 'name' | 'settings' | 'status'> | null;
  /** The request's mode moves no real money: every page says so (api/pages/layout.ts). */
  testMode: boolean;
}

const attemptPattern = /^[A-Za-z0-9_-]{16,64}$/;

function when(view: View, instant: Date): string {
  const locale = view.account?.settings.language ?? 'en';
  const timeZone = view.account?.settings.timezone ?? 'UTC';
  try {
    return new Intl.DateTimeFormat(locale, {
      year: 'numeric',
      month: 'short',
      day: 'numeric',
      hour: 'numeric',
      minute: '2-digit',
      timeZone,
      timeZoneName: 'short',
    }).format(instant);
  } catch {
    return instant.toISOString();
  }
}

const amountOf = (view: View) =>
  formatMoney(view.request.amount, view.request.currency, view.account?.settings.language ?? 'en');
const nameOf = (view: View) => (view.account ? brandOf(view.account, '').name : 'The merchant');
/** The account's branding when it set some (the logo from this origin: img-src 'self'). */
const brandFor = (view: View) => (view.account?.settings.branding ? brandOf(view.account, '') : undefined);
/** A page about the request: in its mode (the TEST MODE badge) and in the account's branding. */
const requestPage = (c: Context, view: View, status: number, title: string, body: Html, script: string | null = null) =>
  page(c, status, title, body, script, view.testMode, brandFor(view));

/** The page for a request that cannot be paid (any more), with its HTTP status. */
function statusPage(c: Context, view: View) {
  const { request } = view;
  const amount = amountOf(view);
  const name = nameOf(view);
  // A closed account takes no payments, even if canceling its requests failed.
  const status = request.status === 'pending' && view.account?.status === 'closed' ? 'canceled' : request.status;
  switch (status) {
    case 'succeeded':
      return requestPage(
        c,
        view,
        200,
        'Already paid',
        stateCard('ok', '✓', 'This request has been paid', [
          html`${amount} was paid to ${name}${request.paidAt ? html` on ${when(view, request.paidAt)}` : ''}.`,
          html`There is nothing more to do.`,
          html`<a href="/pay/${request.token}/receipt.pdf">Download the receipt (PDF)</a>`,
        ]),
      );
    case 'canceled':
      return requestPage(
        c,
        view,
        410,
        'Payment request canceled',
        stateCard('off', '×', 'This payment request was canceled', [
          html`${name} canceled this request for ${amount}.`,
          html`Nothing was charged. Contact ${name} if you think this is a mistake.`,
        ]),
      );
    case 'failed':
      return requestPage(
        c,
        view,
        410,
        'Payment link expired',
        stateCard('off', '!', 'This payment link has expired', [
          html`It expired on ${when(view, request.expiresAt)}. Nothing was charged.`,
          html`Ask ${name} to send you a new one.`,
        ]),
      );
    default:
      return payForm(c, view, null, 200);
  }
}

function notFoundPage(c: Context) {
  return page(
    c,
    404,
    'Payment link not found',
    stateCard('off', '?', 'Payment link not found', [
      html`This link is not valid. Check that you opened the whole link from your email.`,
    ]),
  );
}

function payForm(c: Context, view: View, error: string | null, status: number) {
  const { request } = view;
  const amount = amountOf(view);
  const attempt = randomBytes(18).toString('base64url');
  const body = html`
<p class="from"><strong>${nameOf(view)}</strong> requests${view.testMode ? html`<span class="badge">TEST MODE</span>` : ''}</p>
<p class="amount">${amount}</p>
<dl>
${request.reference ? html`<dt>Reference</dt><dd>${request.reference}</dd>` : ''}
<dt>Billed to</dt><dd>${request.customerEmail}</dd>
<dt>Link expires</dt><dd>${when(view, request.expiresAt)}</dd>
</dl>
${error ? html`<div class="alert error" role="alert">${error}</div>` : ''}
<form method="post" id="pay-form">
<input type="hidden" name="attempt" value="${attempt}">
<fieldset>
<legend>Pay with a test card</legend>
${payPageMethods.map(
  (method) =>
    html`<label class="method"><input type="radio" name="payment_method" value="${method.id}" required><span class="name">${method.label}<span class="hint"><code>${method.id}</code> · ${method.outcome}</span></span></label>`,
)}
</fieldset>
<button type="submit">Pay ${amount}</button>
</form>`;
  // Works without it; with it, a second click cannot send the form again while the first is on its way.
  const script = `document.getElementById('pay-form').addEventListener('submit',function(){var b=this.querySelector('button');setTimeout(function(){b.disabled=true;b.textContent='Processing…';},0);});`;
  return requestPage(c, view, status, `Pay ${amount} to ${nameOf(view)}`, body, script);
}

function successPage(c: Context, view: View) {
  const { request } = view;
  return requestPage(
    c,
    view,
    200,
    'Payment successful',
    stateCard('ok', '✓', 'Payment successful', [
      html`You paid ${amountOf(view)} to ${nameOf(view)}.`,
      html`A receipt is on its way to ${request.customerEmail}.`,
      ...(request.reference ? [html`Reference: ${request.reference}`] : []),
      html`<a href="/pay/${request.token}/receipt.pdf">Download the receipt (PDF)</a>`,
    ]),
  );
}

/** Back from a hosted checkout that took the payment: the processor's webhook settles the request shortly. */
function checkoutReturnPage(c: Context, view: View) {
  return requestPage(
    c,
    view,
    200,
    'Payment processing',
    stateCard('ok', '…', 'Your payment is being confirmed', [
      html`Thank you. ${nameOf(view)} will send a receipt to ${view.request.customerEmail} once it is confirmed.`,
      html`You can close this page.`,
    ]),
  );
}

export function payPageApp({ config, context }: AppDeps) {
  const { orm, temporal, processors, logger } = context;
  async function load(token: string): Promise<View | null> {
    if (!tokenPattern.test(token)) return null;
    const em = orm.em.fork();
    const request = await em.findOne(PaymentRequest, { token });
    if (!request) return null;
    const account = await em.findOne(
      Account,
      { id: request.accountId },
      { fields: ['id', 'name', 'settings', 'status'] },
    );
    return { request, account, testMode: processors.isTestMode(request.livemode) };
  }

  /**
   * A mode on a processor with a hosted checkout (Stripe): a payable request goes there (303).
   * One Checkout Session per request (the idempotency key), back to this page either way.
   */
  async function hostedCheckout(c: Context, view: View): Promise<Response | null> {
    const { request } = view;
    if (request.status !== 'pending' || view.account?.status === 'closed') return null;
    const processor = processors.forMode(request.livemode);
    if (processor.name === 'sandbox') return null;
    if (c.req.method === 'GET' && c.req.query('checkout') === 'success') return checkoutReturnPage(c, view);
    if (c.req.method === 'GET' && c.req.query('checkout') === 'canceled') {
      // Back from the checkout without paying: offer it again rather than sending them straight back.
      const again = html`${stateCard('off', '×', 'Payment not completed', [html`Nothing was charged.`])}<form method="post" action="/pay/${request.token}"><button type="submit">Pay ${amountOf(view)}</button></form>`;
      return requestPage(c, view, 200, `Pay ${amountOf(view)} to ${nameOf(view)}`, again);
    }
    const here = `${config.publicUrl}/pay/${request.token}`;
    const session = await processor
      .createCheckout({
        idempotencyKey: `${request.id}:checkout`,
        amount: request.amount,
        currency: request.currency,
        description: request.reference ?? `Payment to ${nameOf(view)}`,
        successUrl: `${here}?checkout=success`,
        cancelUrl: `${here}?checkout=canceled`,
        metadata: { payment_request_id: request.id },
        mode: 'payment',
      })
      .catch((error: unknown) => {
        logger.error({ err: error, paymentRequestId: request.id }, 'pay page: could not create the checkout');
        return 'unavailable' as const;
      });
    if (session === 'unavailable') {
      return requestPage(
        c,
        view,
        503,
        'Try again',
        stateCard('bad', '!', 'We could not open the payment page just now', [
          html`Nothing was charged. Please try again in a minute.`,
        ]),
      );
    }
    return session ? c.redirect(session.url, 303) : null;
  }

  const app = new Hono();
  app.get('/:token', async (c) => {
    const view = await load(c.req.param('token'));
    if (!view) return notFoundPage(c);
    return (await hostedCheckout(c, view)) ?? statusPage(c, view);
  });

  // The receipt of a paid request as a PDF (the receipt email links it): the token is the credential, as for the page.
  app.get('/:token/receipt.pdf', async (c) => {
    const view = await load(c.req.param('token'));
    if (!view) return notFoundPage(c);
    const { request } = view;
    if (request.status !== 'succeeded')
      return page(
        c,
        404,
        'No receipt yet',
        stateCard('off', '?', 'No receipt yet', [html`This request has not been paid, so it has no receipt.`]),
      );
    const em = orm.em.fork();
    const [account, logo] = await Promise.all([
      em.findOne(Account, { id: request.accountId }),
      loadLogo(em, request.accountId),
    ]);
    const brand = account ? brandOf(account, '') : null;
    const pdf = await renderReceiptPdf(
      {
        id: request.id,
        amount: request.amount,
        currency: request.currency,
        reference: request.reference ?? null,
        paidAt: request.paidAt ?? request.updatedAt,
        paidBy: request.customerEmail,
        seller: { name: brand?.name ?? 'The merchant', email: account?.email ?? null },
        ...(account?.settings.branding && brand
          ? { brand: { color: brand.color, logo: logo ? Buffer.from(logo.data) : null } }
          : {}),
        testMode: view.testMode,
        timeZone: account?.settings.timezone || 'UTC',
        locale: account?.settings.language || 'en-US',
      },
      pdfFonts(),
    );
    return c.body(new Uint8Array(pdf), 200, {
      'content-type': 'application/pdf',
      'content-disposition': `inline; filename="receipt-${request.id}.pdf"`,
      'cache-control': 'private, no-store',
    });
  });

  app.post('/:token', async (c) => {
    const view = await load(c.req.param('token'));
    if (!view) return notFoundPage(c);
    if (isCrossSitePost(c, config.publicUrl)) {
      return page(
        c,
        403,
        'Not allowed',
        stateCard('bad', '!', 'This form was sent from another site', [
          html`Open the payment link from your email and pay there.`,
        ]),
      );
    }
    if (view.request.status !== 'pending' || view.account?.status === 'closed') return statusPage(c, view);
    const hosted = await hostedCheckout(c, view);
    if (hosted) return hosted;

    const type = (c.req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    const form =
      type === 'application/x-www-form-urlencoded' || type === 'multipart/form-data' ? await c.req.parseBody() : {};
    const method = typeof form.payment_method === 'string' ? form.payment_method : '';
    const attempt = typeof form.attempt === 'string' ? form.attempt : '';
    if (!attemptPattern.test(attempt))
      return payForm(c, view, 'This form is out of date. Choose a card and pay again.', 400);
    if (method === '') return payForm(c, view, 'Choose a card to pay with.', 400);
    if (!isPayPageMethod(method)) {
      const why = method.startsWith('pm_bank_')
        ? 'Bank debits are not accepted on this page: they take a day to settle. Choose a card.'
        : 'That payment method is not offered here. Choose one of the cards below.';
      return payForm(c, view, why, 400);
    }

    let result: PayResult;
    try {
      result = await temporal.client.workflow
        .getHandle(view.request.id)
        .executeUpdate(payUpdate, { args: [{ paymentMethod: method, attemptKey: `${attempt}:${method}` }] });
    } catch (error) {
      // Refused (no longer pending, too many attempts) or the workflow has just ended: show what the request is now.
      const now = await load(c.req.param('token'));
      if (now && now.request.status !== 'pending') return statusPage(c, now);
      if (error instanceof WorkflowUpdateFailedError && error.cause instanceof ApplicationFailure && error.cause.type) {
        return payForm(c, now ?? view, error.cause.message, error.cause.type === 'invalid_request' ? 400 : 409);
      }
      logger.error(
        { err: error, paymentRequestId: view.request.id, requestId: c.get('requestId') },
        'pay page: update failed',
      );
      return page(
        c,
        503,
        'Try again',
        stateCard('bad', '!', 'We could not take the payment just now', [
          html`Nothing was charged. Please try again in a minute.`,
        ]),
      );
    }
    const current = await load(c.req.param('token'));
    const shown = current ?? view;
    if (result.outcome === 'succeeded') return successPage(c, shown);
    if (result.outcome === 'declined')
      return payForm(
        c,
        shown,
        `${result.error?.message ?? 'The payment was declined.'} Choose another card and try again.`,
        402,
      );
    return statusPage(c, shown);
  });
  return app;
}
