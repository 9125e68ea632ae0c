/**
 * An invoice's PDF (domain/invoice-pdf.ts) with its account as seller: for the API
 * (api/routes/invoices.ts) and the invoice-PDF zip export (services/exports/run.ts); and the font files every
 * PDF of the engine embeds (invoices, credit notes, receipts), read here once so domain/ reads no file.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

import type { EntityManager } from '@mikro-orm/postgresql';

import { Account, type AccountLogo, Customer, type Invoice } from '../../db/entities/index.ts';
import { brandOf } from '../../domain/branding.ts';
import { breakdownText, lineAmount } from '../../domain/invoice-lines.ts';
import { renderInvoicePdf } from '../../domain/invoice-pdf.ts';
import type { PdfFonts } from '../../domain/pdf-page.ts';
import { amountRemaining } from '../../objects/invoice.ts';
import { loadLogo } from '../accounts/branding.ts';

const require = createRequire(import.meta.url);
let fonts: PdfFonts | undefined;

/** DejaVu Sans, regular and bold (embedded, so Latin, Greek and Cyrillic names print as written): read at the first PDF. */
export function pdfFonts(): PdfFonts {
  fonts ??= {
    regular: readFileSync(require.resolve('dejavu-fonts-ttf/ttf/DejaVuSans.ttf')),
    bold: readFileSync(require.resolve('dejavu-fonts-ttf/ttf/DejaVuSans-Bold.ttf')),
  };
  return fonts;
}

/** What every PDF of the engine prints of the merchant: its account as seller, and its color and logo when it set branding. */
export function pdfSeller(account: Account, logo: Pick<AccountLogo, 'data'> | null) {
  const brand = brandOf(account, '');
  return {
    seller: { name: brand.name, email: account.email },
    ...(account.settings.branding ? { brand: { color: brand.color, logo: logo ? Buffer.from(logo.data) : null } } : {}),
  };
}

/**
 * Whom an invoice (and a credit note of it) bills: the customer as billed, falling back to the customer now for
 * invoices issued before names were kept.
 */
export function billedTo(
  invoice: Pick<Invoice, 'customerName' | 'customerEmail'>,
  customer: Pick<Customer, 'name' | 'email'> | null,
): { name: string | null; email: string | null } {
  return {
    name: invoice.customerName ?? customer?.name ?? null,
    email: invoice.customerEmail ?? customer?.email ?? null,
  };
}

/** The PDF of an invoice: its account as seller, the customer as billed (falling back to the customer now for invoices issued before names were kept). */
export async function invoicePdf(em: EntityManager, invoice: Invoice, testMode: boolean): Promise<Buffer> {
  const [account, customer, logo] = await Promise.all([
    em.findOneOrFail(Account, { id: invoice.accountId }),
    invoice.customerEmail ? null : em.findOne(Customer, { id: invoice.customerId }),
    loadLogo(em, invoice.accountId),
  ]);
  return renderInvoicePdf(
    {
      id: invoice.id,
      number: invoice.number,
      status: invoice.status,
      currency: invoice.currency,
      livemode: invoice.livemode,
      testMode,
      issuedAt: invoice.createdAt,
      paidAt: invoice.paidAt ?? null,
      voidedAt: invoice.voidedAt ?? null,
      markedUncollectibleAt: invoice.markedUncollectibleAt ?? null,
      periodStart: invoice.periodStart,
      periodEnd: invoice.periodEnd,
      subscriptionId: invoice.subscriptionId ?? null,
      dueDate: invoice.dueDate ?? null,
      description: invoice.description ?? null,
      lines: invoice.lines.map((line) => ({
        description: line.description,
        quantity: line.quantity,
        unitAmount: line.total === undefined ? line.amount : null,
        amount: lineAmount(line),
        ...(line.breakdown ? { breakdown: breakdownText(line.breakdown, invoice.currency) } : {}),
        periodStart: new Date(line.period_start),
        periodEnd: new Date(line.period_end),
        proration: line.proration ?? false,
      })),
      subtotal: invoice.subtotal,
      ...pdfAdjustments(invoice),
      total: invoice.total,
      amountDue: invoice.amountDue,
      amountPaid: invoice.amountPaid,
      amountRemaining: amountRemaining(invoice),
      ...pdfSeller(account, logo),
      billTo: {
        ...billedTo(invoice, customer),
        taxIds: invoice.customerTaxIds ?? [],
        country: invoice.customerAddress?.country ?? null,
      },
      timeZone: account.settings.timezone || 'UTC',
      locale: account.settings.language || 'en-US',
    },
    pdfFonts(),
  );
}

/** The discount, taxes and balance rows of an invoice's totals, as the PDF and emails print them. */
export function pdfAdjustments(invoice: Invoice) {
  const discounts = invoice.totalDiscountAmounts ?? [];
  const first = discounts[0];
  return {
    discount: first
      ? {
          label: first.name ?? (first.coupon ? `Discount (${first.coupon})` : 'Discount'),
          amount: discounts.reduce((sum, d) => sum + d.amount, 0),
        }
      : null,
    taxes: (invoice.totalTaxAmounts ?? []).map((tax) => ({
      label: `${tax.display_name} ${tax.percentage}%`,
      amount: tax.amount,
      inclusive: tax.inclusive,
    })),
    ...(invoice.totalExcludingTax !== null && invoice.totalExcludingTax !== undefined
      ? { totalExcludingTax: Number(invoice.totalExcludingTax) }
      : {}),
    startingBalance: Number(invoice.startingBalance ?? 0),
    endingBalance: Number(invoice.endingBalance ?? 0),
    reverseCharge: invoice.reverseCharge ?? false,
  };
}
