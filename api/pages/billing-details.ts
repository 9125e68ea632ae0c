import { Hono } from 'hono';
import { sandboxPaymentMethods } from '../../activities/processor.ts';
import { escapeHtml, formatDate } from '../../activities/email-templates.ts';
import { Account, Customer, Subscription } from '../../db/entities/index.ts';
import { createCustomerLinks } from '../../domain/customer-links.ts';
import { formatMoney } from '../../domain/money.ts';
import { notifyPaymentMethodUpdated } from '../customer-events.ts';
import type { ApiDeps } from '../deps.ts';

/** Card test methods a customer can pick here (bank methods settle later and cannot pay a subscription). */
const cardMethods = Object.entries(sandboxPaymentMethods)
  .filter(([name]) => name.startsWith('pm_card_'))
  .map(([name]) => name);

const labels: Record<string, string> = {
  pm_card_visa: 'Visa ending 4242 (succeeds)',
  pm_card_mastercard: 'Mastercard ending 4444 (succeeds)',
  pm_card_chargeDeclined: 'Card that is declined',
  pm_card_insufficientFunds: 'Card with insufficient funds',
  pm_card_expired: 'Expired card',
};

function page(title: string, body: string, status = 200): Response {
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;background:#f3f4f6;color:#1f2937;margin:0;padding:32px 16px}
main{max-width:480px;margin:0 auto;background:#fff;border-radius:10px;padding:32px;box-shadow:0 1px 3px rgba(0,0,0,.08)}
h1{font-size:22px;margin:0 0 8px}.muted{color:#6b7280}.due{background:#fef3c7;border-radius:6px;padding:12px;margin:16px 0}
label{display:block;padding:10px;border:1px solid #d1d5db;border-radius:6px;margin:8px 0;cursor:pointer}
button{background:#1a56db;color:#fff;border:0;border-radius:6px;padding:12px 20px;font-size:16px;cursor:pointer;width:100%;margin-top:16px}
.ok{background:#d1fae5;border-radius:6px;padding:12px}
</style></head><body><main>${body}</main></body></html>`;
  return new Response(html, { status, headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' } });
}

/**
 * The page a failed-payment email links to: `/billing/<signed token>`. The
 * customer sees what is due and picks a payment method; saving it retries every
 * past-due subscription of theirs at once. Plain HTML forms, no JavaScript.
 */
export function billingDetailsPage(deps: ApiDeps) {
  const links = createCustomerLinks({ publicUrl: deps.config.publicUrl, secret: deps.config.auth.secret });

  async function load(token: string) {
    const claims = await links.verifyBillingDetailsToken(token);
    if (!claims) return null;
    const em = deps.orm.em.fork();
    const customer = await em.findOne(Customer, { id: claims.customerId, accountId: claims.accountId, livemode: claims.livemode });
    const account = await em.findOne(Account, { id: claims.accountId });
    if (!customer || !account) return null;
    const pastDue = await em.find(Subscription, { customerId: customer.id, status: 'past_due' });
    return { customer, account, pastDue };
  }

  const invalid = () => page('Link not valid', '<h1>This link is not valid</h1><p class="muted">It may have expired. The latest email about your payment has a fresh link.</p>', 404);

  function form(token: string, data: NonNullable<Awaited<ReturnType<typeof load>>>, notice = ''): Response {
    const { customer, account, pastDue } = data;
    const due = pastDue
      .filter((s) => s.dunning)
      .map((s) => {
        const d = s.dunning!;
        const next = d.nextRetryAt ? `next automatic retry ${formatDate(new Date(d.nextRetryAt), true)}` : `unless paid by ${formatDate(new Date(d.graceEndsAt!), true)} it will be ${d.finalAction === 'pause' ? 'paused' : 'canceled'}`;
        return `<div class="due"><strong>${escapeHtml(formatMoney(d.amount, d.currency))}</strong> due on invoice ${escapeHtml(d.invoiceNumber)}: ${escapeHtml(d.lastFailureMessage)} (${escapeHtml(next)})</div>`;
      })
      .join('');
    const options = cardMethods
      .map((m) => `<label><input type="radio" name="payment_method" value="${m}"${m === customer.paymentMethod ? ' checked' : ''} required> ${escapeHtml(labels[m] ?? m)}</label>`)
      .join('');
    return page(
      `Billing details for ${account.name}`,
      `<h1>Billing details</h1><p class="muted">${escapeHtml(account.name)} · ${escapeHtml(customer.email)}</p>${notice}${due}
<form method="post" action="/billing/${escapeHtml(token)}"><fieldset style="border:0;padding:0"><legend>Payment method (sandbox test cards)</legend>${options}</fieldset>
<button type="submit">Save${pastDue.length ? ' and pay now' : ''}</button></form>`,
    );
  }

  return new Hono()
    .get('/:token', async (c) => {
      const token = c.req.param('token');
      const data = await load(token);
      return data ? form(token, data) : invalid();
    })
    .post('/:token', async (c) => {
      const token = c.req.param('token');
      const data = await load(token);
      if (!data) return invalid();
      const body = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
      const method = typeof body.payment_method === 'string' ? body.payment_method : '';
      if (!cardMethods.includes(method)) {
        return form(token, data, '<p class="due">Choose one of the payment methods below.</p>');
      }
      const em = deps.orm.em.fork();
      const customer = await em.findOneOrFail(Customer, { id: data.customer.id });
      customer.paymentMethod = method;
      await em.flush();
      await notifyPaymentMethodUpdated(deps, customer);
      const retrying = data.pastDue.length
        ? '<p>We are charging your new payment method for what is due now; you will receive an email with the result.</p>'
        : '';
      return page('Billing details saved', `<h1>Saved</h1><p class="ok">Your payment method is now: ${escapeHtml(labels[method] ?? method)}.</p>${retrying}`);
    });
}
