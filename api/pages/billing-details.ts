/**
 * The billing-details page a failed-payment email links to: `/billing/<signed token>`
 * (domain/customer-links.ts; the token is the credential, valid 30 days). The
 * customer sees what is due and picks a payment method; saving it retries every
 * past-due subscription of theirs at once (services/customers/events.ts). Plain HTML
 * forms on the shared page layout; no JavaScript.
 */
import { type Context, Hono } from 'hono';
import { html } from 'hono/html';

import { Account, Customer, Subscription } from '../../db/entities/index.ts';
import { formatDate } from '../../domain/email-templates.ts';
import { formatMoney } from '../../domain/money.ts';
import { isPayPageMethod, payPageMethods } from '../../domain/payment-requests.ts';
import { notifyPaymentMethodUpdated, saveCustomerUpdate } from '../../services/customers/events.ts';
import { sandboxPaymentMethods } from '../../services/processors/sandbox.ts';
import type { AppDeps } from '../deps.ts';
import { isCrossSitePost, page, stateCard } from './layout.ts';

interface View {
  customer: Customer;
  account: Account;
  pastDue: Subscription[];
  /** The customer's mode moves no real money: the page says so. */
  testMode: boolean;
  /** Opened from the customer portal: the portal again (a link ending with that portal session), else null. */
  portalUrl: string | null;
}

/** The way back to the portal the page was opened from. */
const backLink = (view: View) =>
  view.portalUrl ? html`<p><a class="back" href="${view.portalUrl}">← Back to your billing portal</a></p>` : '';

function invalidLink(c: Context) {
  return page(
    c,
    404,
    'Link not valid',
    stateCard('off', '?', 'This link is not valid', [
      html`It may have expired. The latest email about your payment has a fresh link.`,
    ]),
  );
}

function form(c: Context, view: View, status = 200, error: string | null = null) {
  const { customer, account, pastDue } = view;
  const due = pastDue
    .filter((s) => s.dunning)
    .map((s) => {
      const d = s.dunning!;
      const next = d.nextRetryAt
        ? `Next automatic retry: ${formatDate(new Date(d.nextRetryAt), true)}.`
        : `Unless it is paid by ${formatDate(new Date(d.graceEndsAt!), true)}, the subscription will be ${d.finalAction === 'pause' ? 'paused' : 'canceled'}.`;
      return html`<div class="alert error" role="alert"><strong>${formatMoney(d.amount, d.currency)}</strong> due on invoice ${d.invoiceNumber}: ${d.lastFailureMessage} ${next}</div>`;
    });
  const body = html`${backLink(view)}
<p class="from"><strong>${account.name}</strong>${view.testMode ? html`<span class="badge">TEST MODE</span>` : ''}</p>
<h1>Billing details</h1>
<p class="muted">${customer.email}</p>
${due}
${error ? html`<div class="alert error" role="alert">${error}</div>` : ''}
<form method="post">
<fieldset>
<legend>Payment method (test cards)</legend>
${payPageMethods.map(
  (method) =>
    html`<label class="method"><input type="radio" name="payment_method" value="${method.id}" required${method.id === customer.paymentMethod ? ' checked' : ''}><span class="name">${method.label}<span class="hint"><code>${method.id}</code> · ${method.outcome}</span></span></label>`,
)}
</fieldset>
<button type="submit">${pastDue.length ? 'Save and pay now' : 'Save'}</button>
</form>`;
  return page(c, status, `Billing details for ${account.name}`, body, null, view.testMode);
}

export function billingDetailsPage({ context }: AppDeps) {
  const { orm, links, processors } = context;

  async function load(token: string): Promise<View | null> {
    const claims = await links.verifyBillingDetailsToken(token);
    if (!claims) return null;
    const em = orm.em.fork();
    const [customer, account] = await Promise.all([
      em.findOne(Customer, { id: claims.customerId, accountId: claims.accountId, livemode: claims.livemode }),
      em.findOne(Account, { id: claims.accountId, status: 'active' }),
    ]);
    if (!customer || !account) return null;
    const pastDue = await em.find(Subscription, { customerId: customer.id, status: 'past_due' });
    const portalUrl = claims.fromPortal ? (await links.portalUrl(claims)).url : null;
    return { customer, account, pastDue, testMode: processors.isTestMode(customer.livemode), portalUrl };
  }

  return new Hono()
    .get('/:token', async (c) => {
      const view = await load(c.req.param('token'));
      if (!view) return invalidLink(c);
      const processor = processors.forMode(view.customer.livemode);
      if (processor.name === 'sandbox') return form(c, view);
      // A processor with a hosted checkout (Stripe): its setup page collects the card (303 there).
      if (c.req.query('checkout') === 'success') {
        return page(
          c,
          200,
          'Billing details saved',
          html`${stateCard('ok', '✓', 'Thank you', [html`Your new payment method is being confirmed.`])}${backLink(view)}`,
          null,
          view.testMode,
        );
      }
      const here = `${links.publicUrl}/billing/${c.req.param('token')}`;
      const session = await processor.createCheckout({
        idempotencyKey: `${view.customer.id}:setup:${new Date().toISOString().slice(0, 10)}`,
        amount: 0,
        currency: view.pastDue[0]?.dunning?.currency ?? view.account.settings.currency,
        description: `Payment method for ${view.account.name}`,
        successUrl: `${here}?checkout=success`,
        cancelUrl: here,
        metadata: { customer_id: view.customer.id },
        mode: 'setup',
      });
      return session ? c.redirect(session.url, 303) : form(c, view);
    })
    .post('/:token', async (c) => {
      if (isCrossSitePost(c, links.publicUrl)) {
        return page(
          c,
          403,
          'Refused',
          stateCard('bad', '!', 'This form was sent from another site', [
            html`Open the link from your email and try again.`,
          ]),
        );
      }
      const view = await load(c.req.param('token'));
      if (!view) return invalidLink(c);
      // The test cards are the sandbox's: a Stripe-backed mode collects the card on Stripe's page.
      if (processors.forMode(view.customer.livemode).name !== 'sandbox')
        return c.redirect(`/billing/${c.req.param('token')}`, 303);
      const body = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
      const method = typeof body.payment_method === 'string' ? body.payment_method : '';
      if (!isPayPageMethod(method)) return form(c, view, 400, 'Choose one of the payment methods below.');
      // The sandbox checks the card at once, as a processor's setup does: a card that
      // declines is not saved (the customer's method stays as it was), and the page says
      // why and offers the form again. No retry is started for a card known to decline.
      const check = sandboxPaymentMethods[method];
      if (check.outcome === 'failed') {
        const label = payPageMethods.find((m) => m.id === method)!.label;
        return form(
          c,
          view,
          402,
          `${label} was declined: ${check.message} (${check.code}). It was not saved; choose another card.`,
        );
      }
      const em = orm.em.fork();
      const customer = await em.findOneOrFail(Customer, { id: view.customer.id });
      customer.paymentMethod = method;
      // The same save and event as PATCH /v1/customers/{id} (on the customer's test clock, if any).
      await saveCustomerUpdate(em, customer);
      await notifyPaymentMethodUpdated(context, customer);
      const label = payPageMethods.find((m) => m.id === method)!.label;
      const lines = [html`Your payment method is now ${label}.`];
      if (view.pastDue.length)
        lines.push(html`We are charging it for what is due now; you will receive an email with the result.`);
      return page(c, 200, 'Billing details saved', html`${stateCard('ok', '✓', 'Saved', lines)}${backLink(view)}`);
    });
}
