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
 * never charges again. Every value shown is escaped (hono/html); each page sends
 * its own Content-Security-Policy with a per-response nonce for its style and
 * script, `form-action 'self'` and no framing.
 */
import { randomBytes } from 'node:crypto';
import { Hono, type Context } from 'hono';
import { html, raw } from 'hono/html';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { Account, PaymentRequest } from '../../db/entities/index.ts';
import { formatMoney } from '../../domain/money.ts';
import { isPayPageMethod, payPageMethods, tokenPattern, type PayResult } from '../../domain/payment-requests.ts';
import { payUpdate } from '../../workflows/payment-request.ts';
import type { ApiDeps } from '../deps.ts';

type Html = ReturnType<typeof html>;

interface View {
  request: PaymentRequest;
  account: Pick<Account, 'name' | 'settings' | 'status'> | null;
}

const attemptPattern = /^[A-Za-z0-9_-]{16,64}$/;

const styles = `
*{box-sizing:border-box}
body{margin:0;min-height:100vh;background:#f3f4f8;color:#1a1f36;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;display:flex;flex-direction:column;align-items:center;padding:48px 16px}
main{width:100%;max-width:440px;background:#fff;border-radius:14px;box-shadow:0 1px 3px rgba(26,31,54,.08),0 12px 32px rgba(26,31,54,.08);padding:32px}
.from{margin:0;color:#697386;font-size:.95rem}
.from strong{color:#1a1f36}
.amount{margin:.25rem 0 1rem;font-size:2.4rem;font-weight:700;letter-spacing:-.02em}
dl{margin:0 0 1.5rem;display:grid;grid-template-columns:auto 1fr;gap:.35rem 1rem;font-size:.92rem}
dt{color:#697386}dd{margin:0;word-break:break-word}
fieldset{border:0;margin:0 0 1.25rem;padding:0}
legend{font-weight:600;margin-bottom:.6rem;padding:0}
.method{display:flex;align-items:center;gap:.75rem;border:1px solid #e3e8ee;border-radius:10px;padding:.7rem .9rem;margin-bottom:.5rem;cursor:pointer}
.method:hover{border-color:#a3acb9}
.method:has(input:checked){border-color:#635bff;box-shadow:0 0 0 1px #635bff;background:#f7f7ff}
.method input{accent-color:#635bff;width:1.05rem;height:1.05rem;margin:0}
.method .name{flex:1;font-weight:500}
.method code{font-size:.76rem;color:#697386;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.hint{display:block;font-size:.78rem;color:#8792a2}
button{width:100%;border:0;border-radius:10px;background:#635bff;color:#fff;font:inherit;font-weight:600;font-size:1.05rem;padding:.85rem;cursor:pointer}
button:hover{background:#5146e0}
button:disabled{background:#a5a0ff;cursor:progress}
.alert{border-radius:10px;padding:.8rem 1rem;margin:0 0 1.25rem;font-size:.95rem}
.alert.error{background:#fff0f0;color:#a4161a;border:1px solid #f6c4c4}
.state{text-align:center}
.icon{width:56px;height:56px;border-radius:50%;display:flex;align-items:center;justify-content:center;margin:0 auto 1rem;font-size:1.8rem;font-weight:700}
.icon.ok{background:#e3f9e9;color:#0e7a3a}.icon.off{background:#f1f2f6;color:#697386}.icon.bad{background:#fff0f0;color:#a4161a}
h1{font-size:1.35rem;margin:0 0 .5rem}
p{margin:.25rem 0}
.muted{color:#697386;font-size:.92rem}
.badge{display:inline-block;background:#fff4e5;color:#9a5b00;border-radius:6px;padding:.1rem .5rem;font-size:.75rem;font-weight:600;margin-left:.4rem;vertical-align:middle}
footer{margin-top:1.25rem;color:#8792a2;font-size:.8rem}
`;

function page(c: Context, status: number, title: string, body: Html, script: string | null = null) {
  const nonce = randomBytes(16).toString('base64');
  c.header(
    'Content-Security-Policy',
    `default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`,
  );
  // The page shows one customer's request: never cached, never indexed.
  c.header('Cache-Control', 'no-store');
  c.header('X-Robots-Tag', 'noindex');
  return c.html(
    html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<link rel="icon" href="data:,">
<title>${title}</title>
<style nonce="${nonce}">${raw(styles)}</style>
</head>
<body>
<main>
${body}
</main>
<footer>Secure payment page · Billing engine</footer>
${script ? html`<script nonce="${nonce}">${raw(script)}</script>` : ''}
</body>
</html>`,
    status as 200,
  );
}

function when(view: View, instant: Date): string {
  const locale = view.account?.settings.language ?? 'en';
  const timeZone = view.account?.settings.timezone ?? 'UTC';
  try {
    return new Intl.DateTimeFormat(locale, { year: 'numeric', month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit', timeZone, timeZoneName: 'short' }).format(instant);
  } catch {
    return instant.toISOString();
  }
}

const amountOf = (view: View) => formatMoney(view.request.amount, view.request.currency, view.account?.settings.language ?? 'en');
const nameOf = (view: View) => view.account?.name ?? 'The merchant';

function stateCard(icon: 'ok' | 'off' | 'bad', mark: string, title: string, lines: Html[]) {
  return html`<div class="state"><div class="icon ${icon}" aria-hidden="true">${mark}</div><h1>${title}</h1>${lines.map((line) => html`<p class="muted">${line}</p>`)}</div>`;
}

/** The page for a request that cannot be paid (any more), with its HTTP status. */
function statusPage(c: Context, view: View) {
  const { request } = view;
  const amount = amountOf(view);
  const name = nameOf(view);
  // A closed account takes no payments, even if canceling its requests failed.
  const status = request.status === 'pending' && view.account?.status === 'closed' ? 'canceled' : request.status;
  switch (status) {
    case 'succeeded':
      return page(
        c,
        200,
        'Already paid',
        stateCard('ok', '✓', 'This request has been paid', [
          html`${amount} was paid to ${name}${request.paidAt ? html` on ${when(view, request.paidAt)}` : ''}.`,
          html`There is nothing more to do.`,
        ]),
      );
    case 'canceled':
      return page(c, 410, 'Payment request canceled', stateCard('off', '×', 'This payment request was canceled', [html`${name} canceled this request for ${amount}.`, html`Nothing was charged. Contact ${name} if you think this is a mistake.`]));
    case 'failed':
      return page(c, 410, 'Payment link expired', stateCard('off', '!', 'This payment link has expired', [html`It expired on ${when(view, request.expiresAt)}. Nothing was charged.`, html`Ask ${name} to send you a new one.`]));
    default:
      return payForm(c, view, null, 200);
  }
}

function notFoundPage(c: Context) {
  return page(c, 404, 'Payment link not found', stateCard('off', '?', 'Payment link not found', [html`This link is not valid. Check that you opened the whole link from your email.`]));
}

function payForm(c: Context, view: View, error: string | null, status: number) {
  const { request } = view;
  const amount = amountOf(view);
  const attempt = randomBytes(18).toString('base64url');
  const body = html`
<p class="from"><strong>${nameOf(view)}</strong> requests${request.livemode ? '' : html`<span class="badge">TEST MODE</span>`}</p>
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
  return page(c, status, `Pay ${amount} to ${nameOf(view)}`, body, script);
}

function successPage(c: Context, view: View) {
  const { request } = view;
  return page(
    c,
    200,
    'Payment successful',
    stateCard('ok', '✓', 'Payment successful', [
      html`You paid ${amountOf(view)} to ${nameOf(view)}.`,
      html`A receipt is on its way to ${request.customerEmail}.`,
      ...(request.reference ? [html`Reference: ${request.reference}`] : []),
    ]),
  );
}

/** A form sent from another site (a forged post) is refused; the browser tells us where it came from. */
function crossSite(c: Context, publicUrl: string): boolean {
  const site = c.req.header('sec-fetch-site');
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return true;
  const origin = c.req.header('origin');
  // "null" is what browsers send under Referrer-Policy: no-referrer (our default header).
  if (origin === undefined || origin === 'null') return false;
  return origin !== new URL(c.req.url).origin && origin !== new URL(publicUrl).origin;
}

export function payPageApp({ orm, temporal, config, logger }: ApiDeps) {
  async function load(token: string): Promise<View | null> {
    if (!tokenPattern.test(token)) return null;
    const em = orm.em.fork();
    const request = await em.findOne(PaymentRequest, { token });
    if (!request) return null;
    const account = await em.findOne(Account, { id: request.accountId }, { fields: ['name', 'settings', 'status'] });
    return { request, account };
  }

  const app = new Hono();
  app.get('/:token', async (c) => {
    const view = await load(c.req.param('token'));
    return view ? statusPage(c, view) : notFoundPage(c);
  });

  app.post('/:token', async (c) => {
    const view = await load(c.req.param('token'));
    if (!view) return notFoundPage(c);
    if (crossSite(c, config.publicUrl)) {
      return page(c, 403, 'Not allowed', stateCard('bad', '!', 'This form was sent from another site', [html`Open the payment link from your email and pay there.`]));
    }
    if (view.request.status !== 'pending' || view.account?.status === 'closed') return statusPage(c, view);

    const type = (c.req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    const form = type === 'application/x-www-form-urlencoded' || type === 'multipart/form-data' ? await c.req.parseBody() : {};
    const method = typeof form.payment_method === 'string' ? form.payment_method : '';
    const attempt = typeof form.attempt === 'string' ? form.attempt : '';
    if (!attemptPattern.test(attempt)) return payForm(c, view, 'This form is out of date. Choose a card and pay again.', 400);
    if (method === '') return payForm(c, view, 'Choose a card to pay with.', 400);
    if (!isPayPageMethod(method)) {
      const why = method.startsWith('pm_bank_')
        ? 'Bank debits are not accepted on this page: they take a day to settle. Choose a card.'
        : 'That payment method is not offered here. Choose one of the cards below.';
      return payForm(c, view, why, 400);
    }

    let result: PayResult;
    try {
      result = await temporal.workflow.getHandle(view.request.id).executeUpdate(payUpdate, { args: [{ paymentMethod: method, attemptKey: `${attempt}:${method}` }] });
    } catch (error) {
      // Refused (no longer pending, too many attempts) or the workflow has just ended: show what the request is now.
      const now = await load(c.req.param('token'));
      if (now && now.request.status !== 'pending') return statusPage(c, now);
      if (error instanceof WorkflowUpdateFailedError && error.cause instanceof ApplicationFailure && error.cause.type) {
        return payForm(c, now ?? view, error.cause.message, error.cause.type === 'invalid_request' ? 400 : 409);
      }
      logger.error({ err: error, paymentRequestId: view.request.id, requestId: c.get('requestId') }, 'pay page: update failed');
      return page(c, 503, 'Try again', stateCard('bad', '!', 'We could not take the payment just now', [html`Nothing was charged. Please try again in a minute.`]));
    }
    const current = await load(c.req.param('token'));
    const shown = current ?? view;
    if (result.outcome === 'succeeded') return successPage(c, shown);
    if (result.outcome === 'declined') return payForm(c, shown, `${result.error?.message ?? 'The payment was declined.'} Choose another card and try again.`, 402);
    return statusPage(c, shown);
  });
  return app;
}
