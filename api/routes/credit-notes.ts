/**
 * Credit notes (docs/discounts-and-taxes.md#credit-notes-and-customer-balance): issue one on a paid
 * invoice (services/credit-notes/issue.ts decides it under the payment's and the invoice's locks), preview,
 * list, retrieve, its PDF (authenticated, and by a signed link for the email) and void.
 */
import { timingSafeEqual } from 'node:crypto';

import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';

import { CreditNote, creditNoteReasons, creditNoteStatuses, Customer, Invoice } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { currency as currencyCode } from '../../objects/common.ts';
import { CreditNoteSchema, serializeCreditNote } from '../../objects/credit-note.ts';
import {
  creditNotePdf,
  creditNotePdfToken,
  emailCreditNote,
  signedCreditNotePdfUrl,
} from '../../services/credit-notes/delivery.ts';
import {
  createCreditNote,
  type CreditNoteRequest,
  previewCreditNote,
  voidCreditNote,
} from '../../services/credit-notes/issue.ts';
import { creditOpenInvoiceThroughOwner } from '../../services/credit-notes/owner.ts';
import { completeRefund } from '../../services/money/refunds.ts';
import { clockTimeOf } from '../../services/test-clocks/clocks.ts';
import { onTestClock } from '../../services/test-clocks/now.ts';
import { accountScope } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { notFoundInMode } from '../not-found.ts';
import { json, newOpenApiApp } from '../openapi-app.ts';
import { cursorQuery, keysetPage, listRoute, oneCursor } from '../pagination.ts';
import { errorResponses, idParam, oneCustomerName } from '../schemas.ts';

const tags = ['Credit notes'];
const minor = z.number().int().min(1).max(99_999_999);
const nonNegative = z.number().int().min(0).max(99_999_999);

const LineBody = z
  .object({
    type: z.enum(['invoice_line_item', 'custom_amount']).openapi({
      description:
        "invoice_line_item: part of one of the invoice's lines; custom_amount: an amount with its own description",
    }),
    line_index: z.number().int().min(0).max(10_000).optional().openapi({
      description: 'invoice_line_item: the index (from 0) of the invoice line, as GET /v1/invoices/{id} lists them',
    }),
    quantity: z.number().int().min(1).max(1_000_000_000).optional().openapi({
      description: "invoice_line_item: units credited (the line's unit amount × quantity); or give amount",
    }),
    amount: minor.optional().openapi({
      description: 'Minor units credited: custom_amount (required), or invoice_line_item instead of quantity',
    }),
    description: z
      .string()
      .min(1)
      .max(500)
      .optional()
      .openapi({ description: "custom_amount: required; invoice_line_item: defaults to the invoice line's" }),
  })
  .strict()
  .superRefine((line, ctx) => {
    if (line.type === 'custom_amount') {
      if (line.amount === undefined)
        ctx.addIssue({ code: 'custom', message: 'a custom_amount line needs amount', path: ['amount'] });
      if (line.description === undefined)
        ctx.addIssue({ code: 'custom', message: 'a custom_amount line needs description', path: ['description'] });
      if (line.line_index !== undefined || line.quantity !== undefined)
        ctx.addIssue({ code: 'custom', message: 'a custom_amount line takes amount and description only' });
    } else {
      if (line.line_index === undefined)
        ctx.addIssue({ code: 'custom', message: 'an invoice_line_item line needs line_index', path: ['line_index'] });
      if ((line.quantity === undefined) === (line.amount === undefined))
        ctx.addIssue({ code: 'custom', message: 'an invoice_line_item line needs quantity or amount (one of them)' });
    }
  });

const creditFields = {
  invoice: z
    .string()
    .regex(/^inv_[0-9a-z]{26}$/, 'must be an invoice id')
    .openapi({ description: 'The paid or open invoice to credit' }),
  amount: minor.optional().openapi({ description: "The credit note's total as one amount (instead of lines)" }),
  currency: currencyCode
    .optional()
    .openapi({ description: "Optional: must be the invoice's currency (400 currency_mismatch otherwise)" }),
  reason: z.enum(creditNoteReasons).optional(),
  memo: z.string().min(1).max(1000).optional().openapi({ description: 'A note to the customer (PDF and email)' }),
  refund_amount: nonNegative.optional().openapi({
    description: 'Back to the payment method that paid the invoice, through the processor (a refund of its payment)',
  }),
  credit_amount: nonNegative.optional().openapi({
    description:
      "To the customer's balance, used by its next invoices. Default: what refund_amount and out_of_band_amount leave of the total",
  }),
  out_of_band_amount: nonNegative.optional().openapi({ description: 'Given back outside the engine; recorded only' }),
};

const CreateBody = z
  .object({ ...creditFields, lines: z.array(LineBody).min(1).max(100).optional() })
  .strict()
  .refine((body) => (body.lines === undefined) !== (body.amount === undefined), {
    message: 'give lines or amount (one of them)',
  })
  .openapi({
    example: {
      invoice: 'inv_01jd3x5k8q0m2v7c9r4t6y1w3e',
      lines: [{ type: 'invoice_line_item', line_index: 0, quantity: 1 }],
      reason: 'product_unsatisfactory',
      memo: 'Sorry about the outage on the 12th.',
      refund_amount: 2000,
    },
  });

const PreviewQuery = z
  .object({
    ...creditFields,
    amount: z.coerce
      .number()
      .int()
      .min(1)
      .max(99_999_999)
      .optional()
      .openapi({ description: "The credit note's total as one amount (instead of lines)" }),
    refund_amount: z.coerce.number().int().min(0).max(99_999_999).optional(),
    credit_amount: z.coerce.number().int().min(0).max(99_999_999).optional(),
    out_of_band_amount: z.coerce.number().int().min(0).max(99_999_999).optional(),
    lines: z.string().max(20_000).optional().openapi({
      description:
        'The lines as POST /v1/credit_notes takes them, JSON-encoded (e.g. `[{"type":"invoice_line_item","line_index":0,"quantity":1}]`)',
    }),
  })
  .strict();

const ListQuery = z
  .object({
    ...cursorQuery('creditNote'),
    invoice: z.string().min(1).max(64).optional().openapi({ description: 'Only the credit notes of this invoice' }),
    customer: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .openapi({ description: "Only this customer's; `customer_id` is the same filter" }),
    customer_id: z.string().min(1).max(64).optional(),
    status: z.enum(creditNoteStatuses).optional(),
  })
  .strict()
  .refine(...oneCursor)
  .refine(...oneCustomerName);

const pdfContent = { content: { 'application/pdf': { schema: z.string().openapi({ format: 'binary' }) } } };

const routes = {
  create: createRoute({
    method: 'post',
    path: '/',
    tags,
    summary: 'Issue a credit note',
    description:
      'Credits a **paid** or **open** invoice by lines (`invoice_line_item` by quantity or amount, `custom_amount`) or by one `amount`, and says where the money goes: ' +
      "`refund_amount` (a refund of the invoice's payment through the processor, on the ledger), `credit_amount` (the customer balance) and `out_of_band_amount`, " +
      'which add up to the total. The credit notes of an invoice never exceed its total, and with the refunds of its payment never give back more than it collected. ' +
      'On an **open** invoice the credit note lowers what is due instead (no refund, credit or out-of-band amounts; at most what is left to pay), through the workflow that charges the invoice, so a charge in flight and the credit note never overlap; ' +
      'an invoice credited to nothing due is paid without a charge. A draft, void or uncollectible invoice answers 409 `invalid_state`. Records `credit_note.created` (and `customer_balance_transaction.created`, ' +
      '`transaction.created` for a refund) and emails the customer.',
    request: { body: { ...json(CreateBody), required: true } },
    responses: {
      201: { description: 'Issued', ...json(CreditNoteSchema) },
      ...errorResponses(400, 401, 402, 404, 409),
    },
  }),
  preview: createRoute({
    method: 'get',
    path: '/preview',
    tags,
    summary: 'Preview a credit note',
    description:
      'The credit note POST /v1/credit_notes would issue now with these values, checked the same way; nothing is written (its id is `cn_preview` and its `pdf` empty).',
    request: { query: PreviewQuery },
    responses: {
      200: { description: 'The credit note it would issue', ...json(CreditNoteSchema) },
      ...errorResponses(400, 401, 404, 409),
    },
  }),
  list: listRoute({ tags, summary: 'List credit notes, newest first', query: ListQuery, item: CreditNoteSchema }),
  get: createRoute({
    method: 'get',
    path: '/{id}',
    tags,
    summary: 'Retrieve a credit note',
    request: { params: idParam('cn') },
    responses: { 200: { description: 'The credit note', ...json(CreditNoteSchema) }, ...errorResponses(401, 404) },
  }),
  pdf: createRoute({
    method: 'get',
    path: '/{id}/pdf',
    tags,
    summary: 'The credit note as a PDF',
    request: { params: idParam('cn') },
    responses: { 200: { description: 'application/pdf', ...pdfContent }, ...errorResponses(401, 404) },
  }),
  void: createRoute({
    method: 'post',
    path: '/{id}/void',
    tags,
    summary: 'Void a credit note',
    description:
      'An issued credit note without a refund becomes `void`: its credit to the customer balance is taken back (a `credit_note` balance transaction of the opposite sign), ' +
      'only while the customer still holds that credit. One with a refund, or whose credit was used, answers 409 `invalid_state`. Records `credit_note.voided`.',
    request: { params: idParam('cn') },
    responses: { 200: { description: 'Voided', ...json(CreditNoteSchema) }, ...errorResponses(401, 404, 409) },
  }),
  publicPdf: createRoute({
    method: 'get',
    path: '/{id}/pdf',
    tags,
    summary: 'The credit note as a PDF, by its signed link',
    description:
      'The `pdf` link of a credit note (from its email): the `token` in the link is the credential. A wrong token answers 404 like an unknown credit note.',
    security: [],
    request: { params: idParam('cn'), query: z.object({ token: z.string().max(200).optional() }) },
    responses: { 200: { description: 'application/pdf', ...pdfContent }, ...errorResponses(404) },
  }),
};

function pdfResponse(c: Context, note: CreditNote, pdf: Buffer): Response {
  return c.body(new Uint8Array(pdf), 200, {
    'content-type': 'application/pdf',
    'content-disposition': `inline; filename="${note.number.replace(/[^A-Za-z0-9-]/g, '_')}.pdf"`,
    'cache-control': 'private, no-store',
  });
}

export function creditNotesApps({ config, context }: AppDeps) {
  const { orm, processors, logger } = context;
  const pdfUrl = (id: string) => signedCreditNotePdfUrl(config, id);

  async function findOwn(id: string, scope: { accountId: string; livemode: boolean }) {
    const em = orm.em.fork();
    const note = await em.findOne(CreditNote, { id, accountId: scope.accountId, livemode: scope.livemode });
    if (!note) throw await notFoundInMode(em, CreditNote, id, scope, 'credit note');
    return note;
  }

  /** The test clock of the invoice's customer, so the credit note, its events and balance movement carry the clock's time. */
  async function clockOfInvoice(invoiceId: string) {
    const em = orm.em.fork();
    const invoice = await em.findOne(Invoice, { id: invoiceId }, { fields: ['customerId'] });
    const customer = invoice
      ? await em.findOne(Customer, { id: invoice.customerId }, { fields: ['testClockId'] })
      : null;
    return clockTimeOf(em, customer?.testClockId);
  }

  const v1 = newOpenApiApp()
    .openapi(routes.create, async (c) => {
      const body = c.req.valid('json');
      const { accountId, livemode } = await accountScope(c, orm);
      const scope = { accountId, livemode };
      const request = body as CreditNoteRequest;
      const clock = await clockOfInvoice(body.invoice);
      const invoice = await orm.em
        .fork()
        .findOne(
          Invoice,
          { id: body.invoice, accountId: scope.accountId, livemode: scope.livemode },
          { fields: ['status'] },
        );
      let note: CreditNote;
      if (invoice?.status === 'open') {
        // Checked here first (a bad request never reaches the workflow), then made by the workflow that owns the invoice.
        await onTestClock(clock, () => previewCreditNote(orm.em.fork(), scope, request));
        const id = newId('creditNote');
        note = await onTestClock(clock, () =>
          creditOpenInvoiceThroughOwner(context, orm.em.fork(), {
            creditNoteId: id,
            pdfUrl: pdfUrl(id),
            scope,
            request,
          }),
        );
      } else {
        const made = await onTestClock(clock, () => createCreditNote(orm.em.fork(), scope, request, pdfUrl));
        note = made.note;
        // The refund is reserved with the credit note; the processor refunds it now (a crash here leaves it to the maintenance reconciler).
        if (made.refundId) await completeRefund(orm.em.fork(), processors.forMode(scope.livemode), made.refundId);
      }
      try {
        await onTestClock(clock, () => emailCreditNote(context, orm.em.fork(), note, pdfUrl(note.id)));
      } catch (error) {
        logger.warn({ err: error, creditNote: note.id }, 'could not email the credit note; it is issued');
      }
      return c.json(serializeCreditNote(note, pdfUrl(note.id)), 201);
    })
    .openapi(routes.preview, async (c) => {
      const query = c.req.valid('query');
      const scope = await accountScope(c, orm);
      let lines: unknown;
      if (query.lines !== undefined) {
        try {
          lines = JSON.parse(query.lines);
        } catch {
          throw new ApiError('invalid_request', 'lines: must be the lines as JSON.');
        }
      }
      const parsed = CreateBody.safeParse({ ...query, ...(lines !== undefined ? { lines } : {}) });
      if (!parsed.success)
        throw new ApiError(
          'invalid_request',
          parsed.error.issues.map((issue) => `${issue.path.join('.') || 'query'}: ${issue.message}`).join('; '),
        );
      const clock = await clockOfInvoice(parsed.data.invoice);
      const note = await onTestClock(clock, () =>
        previewCreditNote(orm.em.fork(), scope, parsed.data as CreditNoteRequest),
      );
      return c.json(serializeCreditNote(note, ''), 200);
    })
    .openapi(routes.list, async (c) => {
      const query = c.req.valid('query');
      const scope = await accountScope(c, orm);
      const where: Record<string, unknown> = { accountId: scope.accountId, livemode: scope.livemode };
      if (query.invoice) where.invoiceId = query.invoice;
      const customer = query.customer ?? query.customer_id;
      if (customer) where.customerId = customer;
      if (query.status) where.status = query.status;
      const { page, hasMore } = await keysetPage(orm.em.fork(), CreditNote, where, query);
      return c.json(
        {
          object: 'list' as const,
          data: page.map((note) => serializeCreditNote(note, pdfUrl(note.id))),
          has_more: hasMore,
        },
        200,
      );
    })
    .openapi(routes.get, async (c) => {
      const note = await findOwn(c.req.valid('param').id, await accountScope(c, orm));
      return c.json(serializeCreditNote(note, pdfUrl(note.id)), 200);
    })
    .openapi(routes.pdf, async (c) => {
      const note = await findOwn(c.req.valid('param').id, await accountScope(c, orm));
      return pdfResponse(
        c,
        note,
        await creditNotePdf(orm.em.fork(), note, processors.isTestMode(note.livemode)),
      ) as never;
    })
    .openapi(routes.void, async (c) => {
      const scope = await accountScope(c, orm);
      const found = await findOwn(c.req.valid('param').id, scope);
      const clock = await clockOfInvoice(found.invoiceId);
      const note = await onTestClock(clock, () => voidCreditNote(orm.em.fork(), scope, found.id, pdfUrl));
      return c.json(serializeCreditNote(note, pdfUrl(note.id)), 200);
    });

  /** Mounted at /credit_notes: the signed PDF links, outside the API's authentication. */
  const root = newOpenApiApp().openapi(routes.publicPdf, async (c) => {
    const { id } = c.req.valid('param');
    const { token } = c.req.valid('query');
    const expected = Buffer.from(creditNotePdfToken(config.auth.secret, id));
    const given = Buffer.from(token ?? '');
    if (given.length !== expected.length || !timingSafeEqual(given, expected))
      throw new ApiError('not_found', 'No such credit note.');
    const em = orm.em.fork();
    const note = await em.findOne(CreditNote, { id });
    if (!note) throw new ApiError('not_found', 'No such credit note.');
    return pdfResponse(c, note, await creditNotePdf(em, note, processors.isTestMode(note.livemode))) as never;
  });

  return { v1, root };
}
