/**
 * One-off invoices (docs/invoices.md#one-off-invoices): POST /v1/invoices makes a draft, finalize
 * hands it to its invoice workflow (workflows/invoice.ts, workflow id = the invoice id), which
 * collects it; pay and void are messages to that workflow, so they and its own charges are one
 * decision at a time. Also the hosted pay page of a send_invoice invoice (/invoices/{id}/pay,
 * signed link from its email; no API key).
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';

import { createRoute, z } from '@hono/zod-openapi';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { type Context, Hono } from 'hono';
import { html } from 'hono/html';

import { Account, collectionMethods, Customer, Invoice } from '../../db/entities/index.ts';
import { brandOf } from '../../domain/branding.ts';
import { ApiError } from '../../domain/errors.ts';
import { type ErrorCode, errorStatus } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { lineAmount } from '../../domain/invoice-lines.ts';
import { invoicePayToken, signedInvoicePayUrl } from '../../domain/invoice-links.ts';
import { formatHumanDate } from '../../domain/locale.ts';
import { formatMoney } from '../../domain/money.ts';
import { isPayPageMethod, payPageMethods } from '../../domain/payment-requests.ts';
import { currency as currencyCode } from '../../objects/common.ts';
import { invoicePdfUrl, InvoiceSchema, serializeInvoice } from '../../objects/invoice.ts';
import { createDraftInvoice, deleteDraftInvoice } from '../../services/invoices/one-off.ts';
import type { InvoiceDiscountRequest } from '../../services/invoices/promotion-codes.ts';
import { updateRefusal, workflowGone } from '../../services/platform/workflow-messages.ts';
import { bindToClock, clockBindingOf, taskQueueFor } from '../../services/test-clocks/clocks.ts';
import {
  discountOneOffInvoiceUpdate,
  invoiceFinalizedUpdate,
  invoiceWorkflow,
  type PayInvoiceInput,
  payInvoiceUpdate,
} from '../../workflows/invoice.ts';
import { AccountIdKey, LivemodeKey } from '../../workflows/search-attributes.ts';
import { accountScope } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { json, newOpenApiApp, optionalJsonBody } from '../openapi-app.ts';
import { type Html, isCrossSitePost, page, stateCard } from '../pages/layout.ts';
import { portalPermissionsOf } from '../portal-permissions.ts';
import { errorResponses, idParam } from '../schemas.ts';

const CreateBody = z
  .object({
    customer: z.string().min(1).max(64),
    collection_method: z.enum(collectionMethods).default('charge_automatically').openapi({
      description:
        "charge_automatically: the customer's payment method is charged at finalize (retried on failure); send_invoice: emailed with a pay link, due days_until_due days after finalize",
    }),
    days_until_due: z.number().int().min(0).max(365).optional().openapi({ description: 'Required with send_invoice' }),
    description: z
      .string()
      .min(1)
      .max(1000)
      .optional()
      .openapi({ description: 'A note the customer reads in the email and on the PDF' }),
    currency: currencyCode.optional().openapi({
      description: "Default: the currency of the customer's oldest pending invoice item, else the customer's currency",
    }),
    pending_invoice_items_behavior: z.enum(['include', 'exclude']).default('include').openapi({
      description:
        "include: the customer's pending items in the invoice's currency are attached to the draft now; exclude: only items attached later (POST /v1/invoice_items with invoice)",
    }),
  })
  .strict()
  .openapi({
    example: {
      customer: 'cus_01jd3x5k8q0m2v7c9r4t6y1w3e',
      collection_method: 'send_invoice',
      days_until_due: 14,
      description: 'Consulting, November 2026',
      pending_invoice_items_behavior: 'include',
    },
  });
const PayBody = z
  .object({
    paid_out_of_band: z.boolean().optional().openapi({
      description:
        'true: the customer paid outside the engine (a bank transfer): marked paid, nothing charged, nothing on the ledger',
    }),
  })
  .strict()
  .openapi({ example: { paid_out_of_band: false } });

const DiscountBody = z
  .object({
    promotion_code: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .openapi({ description: 'A promotion code: what the customer types (any case) or its id (promo_…)' }),
    coupon: z.string().min(1).max(64).optional().openapi({ description: 'Or a coupon id' }),
  })
  .strict()
  .refine((b) => (b.promotion_code === undefined) !== (b.coupon === undefined), {
    message: 'Give promotion_code or coupon (one of them).',
  })
  .openapi({ example: { promotion_code: 'SPRING20' } });

const tags = ['Invoices'];
const routes = {
  create: createRoute({
    method: 'post',
    path: '/',
    tags,
    summary: 'Create a one-off invoice (a draft)',
    description:
      "A `draft` of the customer's invoice items (no number yet, no event, no email): attach items, then finalize. " +
      "`pending_invoice_items_behavior` include (default) takes the customer's pending items in the invoice's currency now.",
    request: { body: { ...json(CreateBody), required: true } },
    responses: { 201: { description: 'The draft', ...json(InvoiceSchema) }, ...errorResponses(400, 401, 404) },
  }),
  finalize: createRoute({
    method: 'post',
    path: '/{id}/finalize',
    tags,
    summary: 'Finalize a draft invoice',
    description:
      "The draft gets its number (the account's sequence), its lines are fixed, it becomes `open` and its invoice workflow starts: " +
      "charge_automatically charges the customer's payment method now (a decline is retried on the account's retry policy; the invoice stays open); " +
      'send_invoice emails it with a pay link and its due date, then reminds 3 days before, on and 7 days after the due date. Records `invoice.created` and `invoice.finalized`. ' +
      'A draft without items answers 409.',
    request: { params: idParam('inv') },
    responses: {
      200: { description: 'The finalized invoice', ...json(InvoiceSchema) },
      ...errorResponses(400, 401, 404, 409),
    },
  }),
  pay: createRoute({
    method: 'post',
    path: '/{id}/pay',
    tags,
    summary: 'Pay a one-off invoice now',
    description:
      "Charges the customer's payment method now (402 `payment_failed` with the decline when it fails; the invoice stays open), or with `paid_out_of_band: true` marks it paid without a charge. " +
      'Open or uncollectible one-off invoices only; its workflow ends once paid.',
    request: { params: idParam('inv'), body: { ...json(PayBody), required: false } },
    responses: {
      200: { description: 'The paid invoice', ...json(InvoiceSchema) },
      ...errorResponses(400, 401, 402, 404, 409),
    },
  }),
  discount: createRoute({
    method: 'post',
    path: '/{id}/discounts',
    tags,
    summary: 'Apply a promotion code or coupon to an open one-off invoice',
    description:
      "The invoice's discount, total and amount_due are computed again (its lines, tax rates and starting balance as issued), by its invoice workflow between its charges (never while one is at the processor). " +
      "The code's and coupon's limits are checked and counted as for a subscription (active, expires_at, max_redemptions, customer, first_time_transaction, minimum_amount against the invoice's subtotal; an amount_off coupon in the invoice's currency). " +
      'Records `customer.discount.created` (its `invoice` set) and `invoice.updated`; discounted to nothing due, the invoice is paid without a charge (`invoice.paid`). ' +
      "The customer can do the same on the hosted pay page when the account's customer_portal setting has promotion_codes. " +
      "400: a limit, a subscription's invoice, an invoice that already has a discount or a credit note, a coupon that applies to none of its lines; 404: an unknown code or coupon; 409: not open.",
    request: { params: idParam('inv'), body: { ...json(DiscountBody), required: true } },
    responses: {
      200: { description: 'The invoice, discounted', ...json(InvoiceSchema) },
      ...errorResponses(400, 401, 404, 409),
    },
  }),
  remove: createRoute({
    method: 'delete',
    path: '/{id}',
    tags,
    summary: 'Delete a draft invoice',
    description: 'Only a draft (an issued invoice is voided instead); its items are pending again.',
    request: { params: idParam('inv') },
    responses: {
      200: {
        description: 'Deleted',
        ...json(z.object({ id: z.string(), object: z.literal('invoice'), deleted: z.literal(true) })),
      },
      ...errorResponses(401, 404, 409),
    },
  }),
};

export function oneOffInvoicesApps({ config, context }: AppDeps) {
  const { orm, temporal, processors } = context;
  const pdfUrl = (id: string) => invoicePdfUrl(config, id);

  /** The caller's invoice `id` in its account and mode (404 otherwise), with that scope and the em that read it. */
  async function callerInvoice(c: Context, id: string) {
    const { accountId, livemode } = await accountScope(c, orm);
    const scope = { accountId, livemode };
    const em = orm.em.fork();
    const invoice = await em.findOne(Invoice, { id, ...scope });
    if (!invoice) throw new ApiError('not_found', `No such invoice: ${id}.`);
    return { scope, em, invoice };
  }

  async function pay(invoiceId: string, input: PayInvoiceInput) {
    try {
      return await temporal.client.workflow.getHandle(invoiceId).executeUpdate(payInvoiceUpdate, { args: [input] });
    } catch (error) {
      const refusal = updateRefusal(error);
      if (refusal)
        throw new ApiError(refusal.type === 'invalid_request' ? 'invalid_request' : 'invalid_state', refusal.message);
      if (workflowGone(error)) return null;
      throw error;
    }
  }

  /** Applies a discount to the open invoice through its workflow (workflows/invoice.ts discountOneOffInvoiceUpdate); a refusal is the ApiError the decision made. */
  async function discount(request: InvoiceDiscountRequest): Promise<void> {
    try {
      await temporal.client.workflow
        .getHandle(request.invoiceId)
        .executeUpdate(discountOneOffInvoiceUpdate, { args: [request] });
    } catch (error) {
      const refusal = updateRefusal(error);
      if (refusal)
        throw new ApiError(
          (refusal.type && refusal.type in errorStatus ? refusal.type : 'invalid_request') as ErrorCode,
          refusal.message,
        );
      if (workflowGone(error)) throw new ApiError('invalid_state', `Invoice ${request.invoiceId} is no longer open.`);
      throw error;
    }
  }

  const v1 = newOpenApiApp()
    .openapi(routes.create, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      const scope = { accountId, livemode };
      const invoice = await createDraftInvoice(orm.em.fork(), scope, c.req.valid('json'));
      return c.json(serializeInvoice(invoice, pdfUrl(invoice.id)), 201);
    })
    .openapi(routes.finalize, async (c) => {
      await optionalJsonBody(c, z.object({}).strict());
      const { id } = c.req.valid('param');
      const { scope, em, invoice } = await callerInvoice(c, id);
      if (invoice.subscriptionId)
        throw new ApiError(
          'invalid_state',
          `Invoice ${invoice.number} is a subscription's: it was finalized when issued.`,
        );
      if (invoice.status !== 'draft')
        throw new ApiError(
          'invalid_state',
          `Invoice ${invoice.number} is ${invoice.status}: only a draft is finalized.`,
        );
      const customer = await em.findOneOrFail(Customer, { id: invoice.customerId });
      // A customer on a test clock: the invoice's workflow runs on the clock's queue and time.
      const testClock = await clockBindingOf(em, customer);
      if (testClock) await bindToClock(temporal.client, testClock, id);
      try {
        await temporal.client.workflow.executeUpdateWithStart(invoiceFinalizedUpdate, {
          startWorkflowOperation: new WithStartWorkflowOperation(invoiceWorkflow, {
            workflowId: id,
            taskQueue: taskQueueFor(temporal.taskQueue, testClock),
            args: [
              {
                invoiceId: id,
                payUrl: signedInvoicePayUrl(config.publicUrl, config.auth.secret, id),
                ...(testClock ? { testClock } : {}),
              },
            ],
            // A retried finalize reaches the same workflow; a draft refused once (no items) can be finalized again later.
            workflowIdConflictPolicy: 'USE_EXISTING',
            workflowIdReusePolicy: 'ALLOW_DUPLICATE',
            staticSummary: `One-off invoice ${id} (${invoice.collectionMethod ?? 'charge_automatically'})`,
            typedSearchAttributes: [
              { key: AccountIdKey, value: scope.accountId },
              { key: LivemodeKey, value: scope.livemode },
            ],
          }),
        });
      } catch (error) {
        const refusal = updateRefusal(error);
        if (refusal) throw new ApiError('invalid_state', refusal.message);
        throw error;
      }
      const finalized = await em.findOneOrFail(Invoice, { id }, { refresh: true });
      return c.json(serializeInvoice(finalized, pdfUrl(id)), 200);
    })
    .openapi(routes.pay, async (c) => {
      const body = await optionalJsonBody(c, PayBody);
      const { id } = c.req.valid('param');
      const { em, invoice } = await callerInvoice(c, id);
      if (invoice.subscriptionId)
        throw new ApiError(
          'invalid_state',
          `Invoice ${invoice.number} is a subscription's: its subscription collects it (update the payment method to retry).`,
        );
      if (invoice.status === 'draft')
        throw new ApiError('invalid_state', `Invoice ${invoice.id} is a draft: finalize it first.`);
      if (invoice.status !== 'open' && invoice.status !== 'uncollectible')
        throw new ApiError('invalid_state', `Invoice ${invoice.number} is ${invoice.status}.`);
      const result = await pay(id, { paidOutOfBand: body.paid_out_of_band === true });
      if (!result) throw new ApiError('invalid_state', `Invoice ${invoice.number} is no longer payable.`);
      if (result.outcome === 'declined')
        throw new ApiError(
          'payment_failed',
          `The charge was declined (${result.error!.code}): ${result.error!.message}`,
        );
      return c.json(serializeInvoice(await em.findOneOrFail(Invoice, { id }, { refresh: true }), pdfUrl(id)), 200);
    })
    .openapi(routes.discount, async (c) => {
      const body = c.req.valid('json');
      const { id } = c.req.valid('param');
      const { scope, em, invoice } = await callerInvoice(c, id);
      if (invoice.subscriptionId)
        throw new ApiError(
          'invalid_request',
          `Invoice ${invoice.number} is a subscription's: apply the discount to the subscription (POST /v1/subscriptions/{id}/discount), from its next invoice.`,
        );
      if (invoice.status !== 'open')
        throw new ApiError(
          'invalid_state',
          `Invoice ${invoice.number ?? invoice.id} is ${invoice.status}: only an open invoice takes a promotion code.`,
        );
      await discount({
        invoiceId: id,
        discountId: newId('discount'),
        scope,
        ...(body.coupon ? { coupon: body.coupon } : {}),
        ...(body.promotion_code ? { promotionCode: body.promotion_code } : {}),
      });
      return c.json(serializeInvoice(await em.findOneOrFail(Invoice, { id }, { refresh: true }), pdfUrl(id)), 200);
    })
    .openapi(routes.remove, async (c) => {
      const { accountId, livemode } = await accountScope(c, orm);
      const scope = { accountId, livemode };
      const invoice = await deleteDraftInvoice(orm.em.fork(), scope, c.req.valid('param').id);
      return c.json({ id: invoice.id, object: 'invoice' as const, deleted: true as const }, 200);
    });

  // ---- The hosted pay page: /invoices/{id}/pay?token=… ----------------------------------------

  function tokenMatches(id: string, token: string | undefined): boolean {
    if (!token) return false;
    const expected = Buffer.from(invoicePayToken(config.auth.secret, id));
    const given = Buffer.from(token);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  async function view(c: Context) {
    const id = c.req.param('id')!;
    if (!tokenMatches(id, c.req.query('token'))) return null;
    const em = orm.em.fork();
    const invoice = await em.findOne(Invoice, { id });
    if (!invoice || invoice.status === 'draft') return null;
    const account = await em.findOneOrFail(Account, { id: invoice.accountId });
    return { invoice, account, testMode: processors.isTestMode(invoice.livemode) };
  }

  type View = NonNullable<Awaited<ReturnType<typeof view>>>;
  const notFound = (c: Context) =>
    page(
      c,
      404,
      'Invoice not found',
      stateCard('off', '?', 'Invoice not found', [
        html`This link is not valid. Check that you opened the whole link from your email.`,
      ]),
    );

  /** The pay page takes promotion codes when the account lets customers enter them (the customer portal's promotion_codes setting, one switch for both). */
  const takesCodes = (account: View['account']) => portalPermissionsOf(account).promotion_codes === true;

  function render(
    c: Context,
    v: View,
    error: string | null,
    status: 200 | 400 | 402 | 403 | 404 | 409 = 200,
    notice: string | null = null,
  ) {
    const { invoice, account } = v;
    const locale = account.settings.language || 'en-US';
    const style = { timeZone: account.settings.timezone, locale };
    const money = (amount: number) => formatMoney(amount, invoice.currency, locale);
    const name = brandOf(account, '').name;
    const brand = account.settings.branding ? brandOf(account, '') : undefined;
    /** A page about this invoice: in its mode (the TEST MODE badge) and in the account's branding. */
    const invoicePage = (status: number, title: string, body: Html) =>
      page(c, status, title, body, null, v.testMode, brand);
    const owed = Number(invoice.amountDue) - Number(invoice.amountPaid);
    const pdf = pdfUrl(invoice.id);
    if (invoice.status === 'paid') {
      return invoicePage(
        200,
        'Invoice paid',
        stateCard('ok', '✓', `Invoice ${invoice.number} is paid`, [
          html`${money(Number(invoice.amountPaid || invoice.amountDue))} was paid to ${name}${invoice.paidAt ? html` on ${formatHumanDate(invoice.paidAt, style)}` : ''}.`,
          html`<a href="${pdf}">Download the invoice (PDF)</a>`,
        ]),
      );
    }
    if (invoice.status === 'void') {
      return invoicePage(
        410,
        'Invoice void',
        stateCard('off', '×', `Invoice ${invoice.number} was voided`, [
          html`Nothing is due. Contact ${name} if you think this is a mistake.`,
        ]),
      );
    }
    if (!v.testMode) {
      // A mode on a real processor: the test cards of this page move no real money there, and no hosted checkout for invoices exists yet.
      return invoicePage(
        200,
        `Invoice ${invoice.number}`,
        stateCard(
          'off',
          '!',
          `Invoice ${invoice.number}: ${money(owed)} due ${formatHumanDate(invoice.dueDate ?? invoice.createdAt, style)}`,
          [
            html`Online payment of invoices is not available for ${name} yet: pay as agreed with them.`,
            html`<a href="${pdf}">The invoice as a PDF</a>`,
          ],
        ),
      );
    }
    const attempt = randomBytes(18).toString('base64url');
    const lines = invoice.lines.map(
      (line) => html`<dt>${line.description} × ${line.quantity}</dt><dd>${money(lineAmount(line))}</dd>`,
    );
    const discounted = (invoice.totalDiscountAmounts ?? [])[0];
    const discountRow =
      Number(invoice.discount) > 0
        ? html`<dt>${discounted?.name ?? (discounted?.coupon ? `Discount (${discounted.coupon})` : 'Discount')}</dt><dd>−${money(Number(invoice.discount))}</dd>`
        : '';
    const taxRow = Number(invoice.tax) > 0 ? html`<dt>Tax</dt><dd>${money(Number(invoice.tax))}</dd>` : '';
    // Only an open invoice without a discount (one per invoice) offers the field.
    const codeForm =
      takesCodes(account) && invoice.status === 'open' && !invoice.discountId
        ? html`<form method="post" class="promotion-code">
<input type="hidden" name="action" value="promotion_code">
<label for="promotion_code">Promotion code</label>
<input id="promotion_code" name="promotion_code" maxlength="64" autocomplete="off" autocapitalize="characters" required>
<button type="submit" class="secondary">Apply</button>
</form>`
        : '';
    const body = html`
<p class="from"><strong>${name}</strong> · invoice ${invoice.number}${v.testMode ? html`<span class="badge">TEST MODE</span>` : ''}</p>
<p class="amount">${money(owed)}</p>
<p class="muted">Due ${formatHumanDate(invoice.dueDate ?? invoice.createdAt, style)}</p>
<dl>${lines}${discountRow}${taxRow}<dt>Total</dt><dd>${money(Number(invoice.total))}</dd></dl>
${error ? html`<p class="error" role="alert">${error}</p>` : ''}
${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}
${codeForm}
<form method="post">
<input type="hidden" name="attempt" value="${attempt}">
<fieldset><legend>Pay with a test card</legend>
${payPageMethods.map((method, index) => html`<label><input type="radio" name="payment_method" value="${method.id}" ${index === 0 ? 'checked' : ''}> ${method.label}</label>`)}
</fieldset>
<button type="submit">Pay ${money(owed)}</button>
</form>
<p><a href="${pdf}">The invoice as a PDF</a></p>`;
    return invoicePage(status, `Invoice ${invoice.number}`, body);
  }

  /** The pay page's promotion code form: applied through the invoice's workflow, the page shown again with the new amount or the refusal. */
  async function applyCode(c: Context, v: View, code: string) {
    if (!takesCodes(v.account)) return render(c, v, 'Promotion codes are not accepted for this invoice.', 403);
    if (!v.testMode || v.invoice.status !== 'open') return render(c, v, null, 409);
    if (code === '' || code.length > 64) return render(c, v, 'Enter a promotion code.', 400);
    try {
      await discount({
        invoiceId: v.invoice.id,
        discountId: newId('discount'),
        scope: { accountId: v.invoice.accountId, livemode: v.invoice.livemode },
        code,
      });
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      const fresh = { ...v, invoice: await orm.em.fork().findOneOrFail(Invoice, { id: v.invoice.id }) };
      // An unknown code is said plainly; a limit says which.
      const why = error.code === 'not_found' ? `${code} is not a valid promotion code.` : error.message;
      return render(c, fresh, why, error.code === 'not_found' ? 404 : error.code === 'invalid_state' ? 409 : 400);
    }
    const fresh = { ...v, invoice: await orm.em.fork().findOneOrFail(Invoice, { id: v.invoice.id }) };
    return render(
      c,
      fresh,
      null,
      200,
      `Promotion code ${code} applied: ${formatMoney(Number(fresh.invoice.discount), fresh.invoice.currency, v.account.settings.language || 'en-US')} off.`,
    );
  }

  const root = new Hono()
    .get('/:id/pay', async (c) => {
      const v = await view(c);
      return v ? render(c, v, null) : notFound(c);
    })
    .post('/:id/pay', async (c) => {
      if (isCrossSitePost(c, config.publicUrl))
        return page(c, 403, 'Refused', stateCard('bad', '!', 'Refused', [html`This form was sent from another site.`]));
      const v = await view(c);
      if (!v) return notFound(c);
      const form = await c.req.parseBody();
      if (form.action === 'promotion_code') return applyCode(c, v, String(form.promotion_code ?? '').trim());
      const method = String(form.payment_method ?? '');
      const attempt = String(form.attempt ?? '');
      if (!isPayPageMethod(method) || !/^[A-Za-z0-9_-]{16,64}$/.test(attempt))
        return render(c, v, 'Choose one of the cards below.', 409);
      if (v.invoice.status !== 'open' && v.invoice.status !== 'uncollectible') return render(c, v, null);
      if (!v.testMode) return render(c, v, null, 409);
      let result;
      try {
        result = await pay(v.invoice.id, { paymentMethod: method, attemptKey: attempt });
      } catch (error) {
        if (error instanceof ApiError)
          return render(c, { ...v, invoice: await orm.em.fork().findOneOrFail(Invoice, { id: v.invoice.id }) }, null);
        throw error;
      }
      const fresh = { ...v, invoice: await orm.em.fork().findOneOrFail(Invoice, { id: v.invoice.id }) };
      if (result?.outcome === 'declined')
        return render(c, fresh, `The card was declined (${result.error!.code}). Try another card.`, 402);
      return render(c, fresh, null);
    });

  return { v1, root };
}
