/**
 * An invoice not made yet, as the API shows it (GET /v1/invoices/upcoming, and the customer
 * portal's plan-change preview): the subscription workflow's own state read with its query,
 * the lines from the domain's functions, then the invoice's descriptions, discounts, taxes and
 * balance as the invoice will have them when it is made.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { type Client, WorkflowNotFoundError } from '@temporalio/client';

import { Account, type Subscription } from '../../db/entities/index.ts';
import { ApiError } from '../../domain/errors.ts';
import { humanizeInstants } from '../../domain/locale.ts';
import type { InvoiceInput } from '../../domain/subscription-decisions.ts';
import { invoiceTotalsFields, serializeInvoiceLine } from '../../objects/invoice.ts';
import { billingStateQuery } from '../../workflows/subscription.ts';
import { invoiceFields, previewAdjustments } from './adjustments.ts';

/** The workflow's billing state (billingStateQuery); a workflow that is gone is `invalid_state`: no invoice is coming. */
export async function billingStateOf(temporal: Client, subscription: Pick<Subscription, 'id'>) {
  try {
    return await temporal.workflow.getHandle(subscription.id).query(billingStateQuery);
  } catch (error) {
    if (error instanceof WorkflowNotFoundError)
      throw new ApiError('invalid_state', 'The subscription has ended: no invoice is coming.');
    throw error;
  }
}

/** `invoice` (not made yet) as the API's UpcomingInvoice: dates in the account's words, discounts, taxes and the customer's balance applied as they stand now. */
export async function presentUpcomingInvoice(orm: MikroORM, subscription: Subscription, invoice: InvoiceInput) {
  const account = await orm.em.fork().findOneOrFail(Account, { id: subscription.accountId });
  // As the invoice will read (services/invoices/cycle-invoices.ts openInvoice): instants in descriptions as dates in the account's language and time zone.
  const dateStyle = { timeZone: account.settings.timezone, locale: account.settings.language };
  const parties = {
    accountId: subscription.accountId,
    livemode: subscription.livemode,
    customerId: subscription.customerId,
    subscriptionId: subscription.id,
    currency: invoice.currency,
    at: new Date(invoice.issuedAt),
  };
  const described = invoice.lines.map((line) => ({
    ...line,
    description: humanizeInstants(line.description, dateStyle),
  }));
  // Discounts, taxes and the customer's balance as they stand now: the invoice applies them as they stand when it is made.
  const adjusted = await previewAdjustments(orm.em.fork(), parties, described, true);
  return {
    object: 'invoice' as const,
    id: null,
    subscription_id: subscription.id,
    customer_id: subscription.customerId,
    currency: invoice.currency,
    lines: adjusted.lines.map(serializeInvoiceLine),
    subtotal: adjusted.totals.subtotal,
    ...invoiceTotalsFields(invoiceFields(adjusted)),
    amount_due: adjusted.totals.amount_due,
    period_start: invoice.periodStart,
    period_end: invoice.periodEnd,
    created_at: invoice.issuedAt,
    livemode: subscription.livemode,
  };
}
