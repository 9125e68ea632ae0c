import { timingSafeEqual } from 'node:crypto';

import { createRoute, z } from '@hono/zod-openapi';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Context } from 'hono';

import { Customer, Invoice, invoiceStatuses } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { billingReasons } from '../../domain/invoice-billing-reason.ts';
import { invoicePdfToken } from '../../domain/invoice-links.ts';
import { invoicePdfUrl, InvoiceSchema, serializeInvoice } from '../../objects/invoice.ts';
import { type InvoiceTransition, transitionInvoice } from '../../services/invoices/cycle-invoices.ts';
import { invoicePdf } from '../../services/invoices/pdf.ts';
import { voidInvoiceThroughOwner } from '../../services/invoices/void.ts';
import { clockCondition, clockTimeOf } from '../../services/test-clocks/clocks.ts';
import { onTestClock } from '../../services/test-clocks/now.ts';
import { accountScope } from '../auth/principal.ts';
import type { AppDeps } from '../deps.ts';
import { notFoundInMode } from '../not-found.ts';
import { json, newOpenApiApp, optionalJsonBody } from '../openapi-app.ts';
import { keysetPage, listRoute, oneCursor } from '../pagination.ts';
import { errorResponses, idParam, oneCustomerName, testClockId } from '../schemas.ts';

export { invoicePdfToken };

function tokenMatches(secret: string, invoiceId: string, token: string): boolean {
  const expected = Buffer.from(invoicePdfToken(secret, invoiceId));
  const given = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function pdfResponse(c: Context, invoice: Invoice, pdf: Buffer): Response {
  return c.body(new Uint8Array(pdf), 200, {
    'content-type': 'application/pdf',
    'content-disposition': `inline; filename="${invoice.number.replace(/[^A-Za-z0-9-]/g, '_')}.pdf"`,
    'cache-control': 'private, no-store',
  });
}

const cursor = z.string().regex(/^inv_[0-9a-z]{26}$/, 'must be an invoice id');
const ListQuery = z
  .object({
    customer: z.string().min(1).max(64).optional().openapi({
      description: 'Only this customer; `customer_id` is accepted as the same filter (give one of the two)',
    }),
    customer_id: z.string().min(1).max(64).optional().openapi({ description: 'Same as `customer`' }),
    subscription: z.string().min(1).max(64).optional().openapi({ description: 'Only this subscription' }),
    status: z.enum(invoiceStatuses).optional(),
    billing_reason: z.enum(billingReasons).optional().openapi({
      description: 'Only invoices made for this reason (subscription_threshold: the early usage invoices)',
    }),
    test_clock: testClockId.optional().openapi({
      description:
        'Only invoices of customers on this test clock; without it (and without a customer or subscription), those on test clocks are left out (as Stripe)',
    }),
    limit: z.coerce.number().int().min(1).max(100).default(20),
    starting_after: cursor.optional(),
    ending_before: cursor.optional(),
  })
  .strict()
  .refine(...oneCursor)
  .refine(...oneCustomerName);
const pdfContent = { content: { 'application/pdf': { schema: z.string().openapi({ format: 'binary' }) } } };

const listDescription =
  'Newest first. Cursor pages on the time-sortable ids (`starting_after` the last id of a page for the next, `ending_before` the first for the previous), ' +
  'so invoices issued between calls never shift a page.';
const listInvoices = (summary: string) =>
  listRoute({ tags: ['Invoices'], summary, description: listDescription, query: ListQuery, item: InvoiceSchema });
const getInvoice = createRoute({
  method: 'get',
  path: '/{id}',
  tags: ['Invoices'],
  summary: 'Retrieve an invoice',
  request: { params: idParam('inv') },
  responses: { 200: { description: 'The invoice', ...json(InvoiceSchema) }, ...errorResponses(401, 404) },
});
const getInvoicePdf = createRoute({
  method: 'get',
  path: '/{id}/pdf',
  tags: ['Invoices'],
  summary: 'The invoice as a PDF',
  request: { params: idParam('inv') },
  responses: { 200: { description: 'application/pdf', ...pdfContent }, ...errorResponses(401, 404) },
});
const transitionRoute = (path: string, summary: string, description: string) =>
  createRoute({
    method: 'post',
    path,
    tags: ['Invoices'],
    summary,
    description,
    request: { params: idParam('inv') },
    responses: { 200: { description: 'The invoice', ...json(InvoiceSchema) }, ...errorResponses(400, 401, 404, 409) },
  });
const voidInvoice = transitionRoute(
  '/{id}/void',
  'Void an invoice',
  'An open or uncollectible invoice becomes `void`: nothing is due and no payment is attempted for it again. A paid or void invoice answers 409 `invalid_state`.',
);
const markUncollectible = transitionRoute(
  '/{id}/mark_uncollectible',
  'Mark an invoice uncollectible',
  'An open invoice becomes `uncollectible` (a bad debt); a payment that succeeds later still marks it paid. Any other status answers 409 `invalid_state`.',
);
const publicPdf = createRoute({
  method: 'get',
  path: '/{id}/pdf',
  tags: ['Invoices'],
  summary: 'The invoice as a PDF, by its signed link',
  description:
    'The `pdf` link of an invoice: no Authorization header, the `token` in the link is the credential. A wrong token answers 404 like an unknown invoice.',
  security: [],
  request: { params: idParam('inv'), query: z.object({ token: z.string().max(200).optional() }) },
  responses: { 200: { description: 'application/pdf', ...pdfContent }, ...errorResponses(404) },
});

export function invoicesApps({ config, context }: AppDeps) {
  const { orm, temporal, processors } = context;
  const pdfUrl = (id: string) => invoicePdfUrl(config, id);

  async function findOwn(em: EntityManager, id: string, scope: { accountId: string; livemode: boolean }) {
    const invoice = await em.findOne(Invoice, { id, accountId: scope.accountId, livemode: scope.livemode });
    if (!invoice) throw await notFoundInMode(em, Invoice, id, scope, 'invoice');
    return invoice;
  }

  async function list(c: Context, query: z.infer<typeof ListQuery>) {
    const scope = await accountScope(c, orm);
    const where: Record<string, unknown> = { accountId: scope.accountId, livemode: scope.livemode };
    const customer = query.customer ?? query.customer_id;
    if (customer) where.customerId = customer;
    if (query.subscription) where.subscriptionId = query.subscription;
    if (query.status) where.status = query.status;
    if (query.billing_reason) where.billingReason = query.billing_reason;
    const onClocks =
      query.test_clock || (!customer && !query.subscription) ? clockCondition(scope, query.test_clock) : null;
    const { page, hasMore } = await keysetPage(orm.em.fork(), Invoice, { ...where, ...onClocks }, query);
    return c.json(
      {
        object: 'list' as const,
        data: page.map((invoice) => serializeInvoice(invoice, pdfUrl(invoice.id))),
        has_more: hasMore,
      },
      200,
    );
  }

  async function transition(c: Context, id: string, to: InvoiceTransition) {
    await optionalJsonBody(c, z.object({}).strict());
    const scope = await accountScope(c, orm);
    const em = orm.em.fork();
    // An invoice of a customer on a test clock changes at the clock's time, its event on the clock.
    const invoice = await em.findOne(
      Invoice,
      { id, accountId: scope.accountId, livemode: scope.livemode },
      { fields: ['customerId'] },
    );
    const customer = invoice?.customerId
      ? await em.findOne(Customer, { id: invoice.customerId }, { fields: ['testClockId'] })
      : null;
    const testClock = await clockTimeOf(em, customer?.testClockId);
    const direct = () =>
      onTestClock(testClock, () =>
        transitionInvoice(em, { invoicePdfUrl: pdfUrl }, id, to, testClock ? new Date(testClock.now) : new Date(), {
          accountId: scope.accountId,
          livemode: scope.livemode,
        }),
      );
    // A void goes through the workflow that may be charging the invoice: its subscription's, or a one-off invoice's own (services/invoices/void.ts).
    const result =
      to === 'void'
        ? await voidInvoiceThroughOwner(
            temporal.client,
            em,
            id,
            { accountId: scope.accountId, livemode: scope.livemode },
            direct,
          )
        : await direct();
    if (result.outcome === 'not_found') throw new ApiError('not_found', 'No such invoice.');
    if (result.outcome === 'refused') {
      const verb = to === 'void' ? 'voided' : 'marked uncollectible';
      throw new ApiError(
        'invalid_state',
        `Invoice ${result.invoice.status === 'draft' ? result.invoice.id : result.invoice.number} is ${result.invoice.status} and cannot be ${verb}.${result.invoice.status === 'draft' ? ' Delete a draft instead.' : ''}`,
      );
    }
    return c.json(serializeInvoice(result.invoice, pdfUrl(result.invoice.id)), 200);
  }

  /** Mounted at /v1/invoices, behind the API's authentication. */
  const v1 = newOpenApiApp()
    .openapi(listInvoices('List invoices, newest first'), (c) => list(c, c.req.valid('query')))
    .openapi(getInvoice, async (c) => {
      const scope = await accountScope(c, orm);
      const invoice = await findOwn(orm.em.fork(), c.req.valid('param').id, scope);
      return c.json(serializeInvoice(invoice, pdfUrl(invoice.id)), 200);
    })
    .openapi(getInvoicePdf, async (c) => {
      const scope = await accountScope(c, orm);
      const em = orm.em.fork();
      const invoice = await findOwn(em, c.req.valid('param').id, scope);
      return pdfResponse(c, invoice, await invoicePdf(em, invoice, processors.isTestMode(invoice.livemode))) as never;
    })
    .openapi(voidInvoice, (c) => transition(c, c.req.valid('param').id, 'void'))
    .openapi(markUncollectible, (c) => transition(c, c.req.valid('param').id, 'uncollectible'));

  /**
   * Mounted at /invoices: SPEC.md's `GET /invoices` (the same list, with the same
   * authentication, which app.ts applies to that path) and the signed PDF links.
   */
  const root = newOpenApiApp()
    .openapi(listInvoices("List invoices (SPEC.md's name for GET /v1/invoices)"), (c) => list(c, c.req.valid('query')))
    .openapi(publicPdf, async (c) => {
      const { id } = c.req.valid('param');
      const { token } = c.req.valid('query');
      // A wrong or missing token answers exactly like an unknown invoice.
      if (!token || !tokenMatches(config.auth.secret, id, token)) throw new ApiError('not_found', 'No such invoice.');
      const em = orm.em.fork();
      const invoice = await em.findOne(Invoice, { id });
      if (!invoice) throw new ApiError('not_found', 'No such invoice.');
      return pdfResponse(c, invoice, await invoicePdf(em, invoice, processors.isTestMode(invoice.livemode))) as never;
    });

  return { v1, root };
}
