/**
 * The invoice as a PDF a person files: seller, bill-to, number, dates, status,
 * lines, totals. Rendered with pdfkit in DejaVu Sans (embedded, subset), so names
 * and currency symbols in Latin, Greek and Cyrillic scripts print as written.
 * Data in, bytes out: the caller reads the invoice, its account and customer.
 */
import { dateTimeFormat } from './intl-formats.ts';
import { adjustmentRows, type AdjustmentView, reverseChargeNote } from './invoice-lines.ts';
import { formatPeriod, humanizeInstants } from './locale.ts';
import { formatMoney } from './money.ts';
import { drawPdfHeader, ink, muted, pageMargin, type PdfFonts, rule, startPdf } from './pdf-page.ts';

export interface InvoicePdfLine {
  description: string;
  quantity: number;
  /** Per unit, minor units; null when the amount is not a whole unit amount × quantity (tiered, package, prorated). */
  unitAmount: number | null;
  /** unitAmount × quantity, or the line's total. */
  amount: number;
  /** How a tiered or package price made the amount, one row of text each ("Units 1–10: 10 × $1.50"). */
  breakdown?: string[];
  periodStart: Date;
  periodEnd: Date;
  proration: boolean;
}

/** With the discount, taxes and balance of AdjustmentView (domain/invoice-lines.ts); reverse charge prints its note under the totals. */
export interface InvoicePdfInput extends AdjustmentView {
  id: string;
  number: string;
  status: 'draft' | 'open' | 'paid' | 'void' | 'uncollectible';
  currency: string;
  /** A one-off invoice's due date (send_invoice: days_until_due after finalize); absent: due on issue, as subscription invoices. */
  dueDate?: Date | null;
  /** A one-off invoice's description, printed under the headline. */
  description?: string | null;
  livemode: boolean;
  /** The mode moves no real money (test mode, or live on the sandbox processor): a TEST MODE mark and line. Default: !livemode. */
  testMode?: boolean;
  issuedAt: Date;
  paidAt: Date | null;
  voidedAt: Date | null;
  markedUncollectibleAt: Date | null;
  periodStart: Date;
  periodEnd: Date;
  subscriptionId: string | null;
  lines: InvoicePdfLine[];
  subtotal: number;
  total: number;
  amountDue: number;
  amountPaid: number;
  amountRemaining: number;
  seller: { name: string; email: string | null; addressLines?: string[] };
  /** The account's branding (domain/branding.ts): a band and the letterhead in its colour, its logo (PNG or JPEG bytes) above the name. */
  brand?: { color: string; logo?: Buffer | null };
  billTo: {
    name: string | null;
    email: string | null;
    taxIds?: { type: string; value: string }[];
    country?: string | null;
  };
  /** IANA zone the dates are written in (the account's). */
  timeZone: string;
  /** The account's language (settings.language) for dates; default en-US. */
  locale?: string;
}

/** "EU VAT" for eu_vat, "US EIN" for us_ein: a tax id's type as people write it. */
const taxIdLabel = (type: string): string => {
  const [country = '', ...kind] = type.split('_');
  return `${country.toUpperCase()} ${kind.join(' ').toUpperCase()}`.trim();
};

const statusStyle = {
  draft: { label: 'DRAFT', color: '#6b7280' },
  open: { label: 'OPEN', color: '#1d4ed8' },
  paid: { label: 'PAID', color: '#15803d' },
  void: { label: 'VOID', color: '#6b7280' },
  uncollectible: { label: 'UNCOLLECTIBLE', color: '#b91c1c' },
} as const;

export async function renderInvoicePdf(invoice: InvoicePdfInput, fonts: PdfFonts): Promise<Buffer> {
  const margin = pageMargin;
  const { doc, finished } = await startPdf(
    {
      Title: `Invoice ${invoice.number}`,
      Author: invoice.seller.name,
      Subject: `Invoice ${invoice.number} from ${invoice.seller.name}`,
      CreationDate: invoice.issuedAt,
    },
    fonts,
    { bufferPages: true },
  );

  const money = (amount: number) => formatMoney(amount, invoice.currency);
  const date = dateTimeFormat('en-US', { dateStyle: 'long', timeZone: invoice.timeZone });
  const style = { timeZone: invoice.timeZone, locale: invoice.locale };
  const period = (start: Date, end: Date) => formatPeriod(start, end, style);
  const left = margin;
  const width = doc.page.width - 2 * margin;
  const right = left + width;
  const footerHeight = 50;
  const bottom = () => doc.page.height - margin - footerHeight;

  // Header: title, status badge, test-mode tag; the seller on the right.
  const testMode = invoice.testMode ?? !invoice.livemode;
  drawPdfHeader(doc, {
    title: 'Invoice',
    badges: [statusStyle[invoice.status], ...(testMode ? [{ label: 'TEST MODE', color: '#f59e0b' }] : [])],
    sellerName: invoice.seller.name,
    brand: invoice.brand ?? null,
  });

  // Facts: number and dates.
  let y = Math.max(doc.y, margin + 40) + 22;
  const facts: [string, string][] = [
    ['Invoice number', invoice.number],
    ['Date of issue', date.format(invoice.issuedAt)],
    ['Date due', date.format(invoice.dueDate ?? invoice.issuedAt)],
  ];
  if (invoice.paidAt) facts.push(['Date paid', date.format(invoice.paidAt)]);
  if (invoice.voidedAt) facts.push(['Date voided', date.format(invoice.voidedAt)]);
  if (invoice.markedUncollectibleAt) facts.push(['Marked uncollectible', date.format(invoice.markedUncollectibleAt)]);
  facts.push([
    'Status',
    invoice.status === 'uncollectible' ? 'Uncollectible' : invoice.status[0]!.toUpperCase() + invoice.status.slice(1),
  ]);
  doc.fontSize(9.5);
  for (const [label, value] of facts) {
    doc.font('Regular').fillColor(muted).text(label, left, y, { width: 120, lineBreak: false });
    doc
      .font('Bold')
      .fillColor(ink)
      .text(value, left + 120, y, { width: width / 2 - 120 });
    y += 15;
  }

  // Parties.
  y += 14;
  const column = (x: number, heading: string, lines: string[]) => {
    doc
      .font('Bold')
      .fontSize(8)
      .fillColor(muted)
      .text(heading.toUpperCase(), x, y, { width: width / 2 - 10, characterSpacing: 0.6 });
    doc.moveDown(0.3);
    lines.forEach((line, index) => {
      doc
        .font(index === 0 ? 'Bold' : 'Regular')
        .fontSize(10)
        .fillColor(index === 0 ? ink : muted)
        .text(line, x, doc.y, { width: width / 2 - 10 });
    });
    return doc.y;
  };
  const fromEnd = column(left, 'From', [
    invoice.seller.name,
    ...(invoice.seller.addressLines ?? []),
    ...(invoice.seller.email ? [invoice.seller.email] : []),
  ]);
  const billToLines = [
    invoice.billTo.name,
    invoice.billTo.email,
    invoice.billTo.country ?? null,
    ...(invoice.billTo.taxIds ?? []).map((id) => `${taxIdLabel(id.type)} ${id.value}`),
  ].filter((line): line is string => Boolean(line));
  const toEnd = column(left + width / 2, 'Bill to', billToLines.length ? billToLines : ['(no name on file)']);
  y = Math.max(fromEnd, toEnd) + 22;

  // The sentence a reader looks for first.
  const due = invoice.dueDate ?? invoice.issuedAt;
  const headline = {
    draft: `Draft: ${money(invoice.total)}, not issued yet`,
    paid: `${money(invoice.amountPaid)} paid on ${invoice.paidAt ? date.format(invoice.paidAt) : date.format(invoice.issuedAt)}`,
    open: `${money(invoice.amountRemaining)} due ${date.format(due)}`,
    void: `This invoice was voided${invoice.voidedAt ? ` on ${date.format(invoice.voidedAt)}` : ''}; nothing is due`,
    uncollectible: `${money(invoice.amountRemaining)} due ${date.format(due)} (marked uncollectible)`,
  }[invoice.status];
  doc.font('Bold').fontSize(15).fillColor(ink).text(headline, left, y, { width });
  doc
    .font('Regular')
    .fontSize(9.5)
    .fillColor(muted)
    .text(`Billing period ${period(invoice.periodStart, invoice.periodEnd)}`, left, doc.y + 4, { width });
  if (invoice.description)
    doc
      .font('Regular')
      .fontSize(9.5)
      .fillColor(ink)
      .text(invoice.description, left, doc.y + 4, { width });
  y = doc.y + 22;

  // Lines.
  const cols = {
    description: { x: left, w: width - 150 - 30 - 72 - 76 },
    period: { x: 0, w: 150 },
    quantity: { x: 0, w: 30 },
    unit: { x: 0, w: 72 },
    amount: { x: 0, w: 76 },
  };
  cols.period.x = cols.description.x + cols.description.w;
  cols.quantity.x = cols.period.x + cols.period.w;
  cols.unit.x = cols.quantity.x + cols.quantity.w;
  cols.amount.x = cols.unit.x + cols.unit.w;
  const tableHeader = () => {
    doc.font('Bold').fontSize(8).fillColor(muted);
    const head = (text: string, col: { x: number; w: number }, align: 'left' | 'right') =>
      doc.text(text.toUpperCase(), col.x + (align === 'left' ? 0 : 0), y, {
        width: col.w - (align === 'left' ? 8 : 0),
        align,
        characterSpacing: 0.5,
        lineBreak: false,
      });
    head('Description', cols.description, 'left');
    head('Period', cols.period, 'left');
    head('Qty', cols.quantity, 'right');
    head('Unit price', cols.unit, 'right');
    head('Amount', cols.amount, 'right');
    y += 14;
    doc.moveTo(left, y).lineTo(right, y).lineWidth(0.8).strokeColor(ink).stroke();
    y += 8;
  };
  tableHeader();
  for (const line of invoice.lines) {
    doc.font('Regular').fontSize(9.5);
    const breakdown = line.breakdown ?? [];
    const descriptionHeight =
      doc.heightOfString(humanizeInstants(line.description, style), { width: cols.description.w - 8 }) +
      (line.proration ? 12 : 0) +
      breakdown.reduce(
        (sum, text) => sum + doc.fontSize(8).heightOfString(text, { width: cols.description.w - 8 }) + 1,
        0,
      );
    doc.fontSize(9.5);
    const periodText = period(line.periodStart, line.periodEnd);
    const periodHeight = doc.heightOfString(periodText, { width: cols.period.w - 8 });
    const rowHeight = Math.max(descriptionHeight, periodHeight) + 10;
    if (y + rowHeight > bottom()) {
      doc.addPage();
      y = margin;
      tableHeader();
    }
    doc
      .font('Regular')
      .fontSize(9.5)
      .fillColor(ink)
      .text(humanizeInstants(line.description, style), cols.description.x, y, { width: cols.description.w - 8 });
    if (line.proration)
      doc
        .fontSize(8)
        .fillColor(muted)
        .text('Proration', cols.description.x, doc.y + 1, { width: cols.description.w - 8 });
    for (const text of breakdown)
      doc
        .fontSize(8)
        .fillColor(muted)
        .text(text, cols.description.x, doc.y + 1, { width: cols.description.w - 8 });
    doc
      .fontSize(9.5)
      .fillColor(muted)
      .text(periodText, cols.period.x, y, { width: cols.period.w - 8 });
    doc.fillColor(ink);
    doc.text(String(line.quantity), cols.quantity.x, y, { width: cols.quantity.w, align: 'right', lineBreak: false });
    if (line.unitAmount !== null)
      doc.text(money(line.unitAmount), cols.unit.x, y, { width: cols.unit.w, align: 'right', lineBreak: false });
    doc.text(money(line.amount), cols.amount.x, y, { width: cols.amount.w, align: 'right', lineBreak: false });
    y += rowHeight;
    doc
      .moveTo(left, y - 5)
      .lineTo(right, y - 5)
      .lineWidth(0.5)
      .strokeColor(rule)
      .stroke();
  }

  // Totals, right-aligned under the amounts, with the discount, taxes and balance between (domain/invoice-lines.ts adjustmentRows).
  const adjustments = adjustmentRows(invoice, money);
  const totals: { label: string; value: string; strong?: boolean; ruleAbove?: boolean }[] = [
    { label: 'Subtotal', value: money(invoice.subtotal) },
    ...adjustments.beforeTotal,
    { label: 'Total', value: money(invoice.total), ruleAbove: true },
    ...adjustments.afterTotal,
    { label: 'Amount paid', value: money(invoice.amountPaid) },
    {
      label: 'Amount due',
      value: money(invoice.status === 'void' ? 0 : invoice.amountRemaining),
      strong: true,
      ruleAbove: true,
    },
  ];
  if (y + totals.length * 20 + 10 > bottom()) {
    doc.addPage();
    y = margin;
  }
  y += 6;
  const labelX = right - 250;
  for (const row of totals) {
    if (row.ruleAbove)
      doc
        .moveTo(labelX, y - 4)
        .lineTo(right, y - 4)
        .lineWidth(0.5)
        .strokeColor(rule)
        .stroke();
    doc
      .font(row.strong ? 'Bold' : 'Regular')
      .fontSize(row.strong ? 11 : 9.5)
      .fillColor(row.strong ? ink : muted);
    doc.text(row.label, labelX, y, { width: 150, lineBreak: false });
    doc.fillColor(ink).text(row.value, right - 100, y, { width: 100, align: 'right', lineBreak: false });
    y += row.strong ? 22 : 18;
  }
  if (invoice.reverseCharge) {
    doc
      .font('Regular')
      .fontSize(9)
      .fillColor(ink)
      .text(reverseChargeNote, left, y + 4, { width });
    y = doc.y;
  }

  // Footer on every page.
  const range = doc.bufferedPageRange();
  for (let index = range.start; index < range.start + range.count; index += 1) {
    doc.switchToPage(index);
    const savedBottom = doc.page.margins.bottom;
    doc.page.margins.bottom = 0;
    const footerY = doc.page.height - margin - footerHeight + 8;
    doc.moveTo(left, footerY).lineTo(right, footerY).lineWidth(0.5).strokeColor(rule).stroke();
    doc.font('Regular').fontSize(8).fillColor(muted);
    const summary = `${testMode ? 'TEST MODE — no real money moves · ' : ''}${invoice.number} · ${headline}`;
    if (testMode) {
      // A watermark across the page, under nothing that matters: a test invoice cannot pass for a real one.
      doc.save();
      doc.rotate(-30, { origin: [doc.page.width / 2, doc.page.height / 2] });
      doc
        .font('Bold')
        .fontSize(110)
        .fillColor('#f59e0b', 0.12)
        .text('TEST', 0, doc.page.height / 2 - 60, { width: doc.page.width, align: 'center', lineBreak: false });
      doc.restore();
      doc.font('Regular').fontSize(8).fillColor(muted);
    }
    doc.text(summary, left, footerY + 8, { width: width - 80, lineBreak: false, ellipsis: true });
    doc.text(`Page ${index - range.start + 1} of ${range.count}`, right - 80, footerY + 8, {
      width: 80,
      align: 'right',
      lineBreak: false,
    });
    if (invoice.seller.email) {
      doc.text(
        `Questions about this invoice? Contact ${invoice.seller.name} at ${invoice.seller.email}.`,
        left,
        footerY + 19,
        { width, lineBreak: false, ellipsis: true },
      );
    }
    doc.text(
      `Amounts in ${invoice.currency}; dates in ${invoice.timeZone}. Invoice ${invoice.id}.`,
      left,
      footerY + 30,
      { width, lineBreak: false, ellipsis: true },
    );
    doc.page.margins.bottom = savedBottom;
  }
  doc.end();
  return finished;
}
