/**
 * A credit note as a PDF (GET /v1/credit_notes/{id}/pdf and its signed link, linked from the
 * credit note's email): the seller, the customer, the invoice it credits, its lines and where the
 * money went. Drawn with the invoice PDF's page and header (domain/pdf-page.ts).
 */
import { dateTimeFormat } from './intl-formats.ts';
import { formatMoney } from './money.ts';
import { drawPdfHeader, ink, muted, pageMargin as margin, type PdfFonts, rule, startPdf } from './pdf-page.ts';

export interface CreditNotePdfInput {
  id: string;
  number: string;
  status: 'issued' | 'void';
  invoiceNumber: string;
  currency: string;
  issuedAt: Date;
  reason: string | null;
  memo: string | null;
  lines: { description: string; quantity: number | null; unitAmount: number | null; amount: number }[];
  total: number;
  refundAmount: number;
  creditAmount: number;
  outOfBandAmount: number;
  seller: { name: string; email: string | null };
  brand?: { color: string; logo?: Buffer | null };
  billTo: { name: string | null; email: string | null };
  testMode: boolean;
  timeZone: string;
}

const reasons: Record<string, string> = {
  duplicate: 'Duplicate charge',
  fraudulent: 'Fraudulent charge',
  order_change: 'Order change',
  product_unsatisfactory: 'Product unsatisfactory',
};

function dateFormat(timeZone: string): Intl.DateTimeFormat {
  try {
    return dateTimeFormat('en-US', { dateStyle: 'long', timeZone });
  } catch {
    return dateTimeFormat('en-US', { dateStyle: 'long', timeZone: 'UTC' });
  }
}

export async function renderCreditNotePdf(note: CreditNotePdfInput, fonts: PdfFonts): Promise<Buffer> {
  const { doc, finished } = await startPdf(
    {
      Title: `Credit note ${note.number}`,
      Author: note.seller.name,
      Subject: `Credit note ${note.number} from ${note.seller.name}`,
      CreationDate: note.issuedAt,
    },
    fonts,
  );
  const money = (amount: number) => formatMoney(amount, note.currency);
  const left = margin;
  const width = doc.page.width - 2 * margin;
  drawPdfHeader(doc, {
    title: 'Credit note',
    badges: [
      note.status === 'void' ? { label: 'VOID', color: '#6b7280' } : { label: 'ISSUED', color: '#15803d' },
      ...(note.testMode ? [{ label: 'TEST MODE', color: '#f59e0b' }] : []),
    ],
    sellerName: note.seller.name,
    brand: note.brand ?? null,
  });
  let y = Math.max(doc.y, margin + 40) + 22;
  const facts: [string, string][] = [
    ['Credit note', note.number],
    ['Invoice', note.invoiceNumber],
    ['Date issued', dateFormat(note.timeZone).format(note.issuedAt)],
    ['Bill to', [note.billTo.name, note.billTo.email].filter(Boolean).join(' · ') || '—'],
    ['From', note.seller.email ? `${note.seller.name} (${note.seller.email})` : note.seller.name],
    ...(note.reason ? [['Reason', reasons[note.reason] ?? note.reason] as [string, string]] : []),
  ];
  for (const [label, value] of facts) {
    doc.font('Regular').fontSize(9.5).fillColor(muted).text(label, left, y, { width: 120, lineBreak: false });
    doc
      .font('Bold')
      .fillColor(ink)
      .text(value, left + 120, y, { width: width - 120 });
    y = Math.max(doc.y, y + 15) + 2;
  }
  y += 12;
  doc
    .font('Bold')
    .fontSize(9.5)
    .fillColor(muted)
    .text('Description', left, y, { width: width - 180, lineBreak: false });
  doc.text('Qty', left + width - 180, y, { width: 40, align: 'right', lineBreak: false });
  doc.text('Amount', left + width - 120, y, { width: 120, align: 'right' });
  y += 16;
  doc
    .moveTo(left, y)
    .lineTo(left + width, y)
    .lineWidth(0.5)
    .strokeColor(rule)
    .stroke();
  y += 6;
  for (const line of note.lines) {
    doc
      .font('Regular')
      .fontSize(9.5)
      .fillColor(ink)
      .text(line.description, left, y, { width: width - 190 });
    const bottom = doc.y;
    doc.text(line.quantity === null ? '' : String(line.quantity), left + width - 180, y, {
      width: 40,
      align: 'right',
      lineBreak: false,
    });
    doc.text(money(line.amount), left + width - 120, y, { width: 120, align: 'right' });
    y = Math.max(bottom, y + 14) + 4;
  }
  doc
    .moveTo(left, y)
    .lineTo(left + width, y)
    .lineWidth(0.5)
    .strokeColor(rule)
    .stroke();
  y += 8;
  const totals: [string, number][] = [
    ['Total credited', note.total],
    ...(note.refundAmount ? [['Refunded to the payment method', note.refundAmount] as [string, number]] : []),
    ...(note.creditAmount ? [['Credited to your balance', note.creditAmount] as [string, number]] : []),
    ...(note.outOfBandAmount ? [['Credited outside this system', note.outOfBandAmount] as [string, number]] : []),
    ...(!note.refundAmount && !note.creditAmount && !note.outOfBandAmount
      ? [['Taken off the amount due', note.total] as [string, number]]
      : []),
  ];
  for (const [i, [label, amount]] of totals.entries()) {
    doc
      .font(i === 0 ? 'Bold' : 'Regular')
      .fontSize(10)
      .fillColor(ink)
      .text(label, left + width / 2 - 60, y, { width: width / 2 - 60, lineBreak: false });
    doc.text(money(amount), left + width - 120, y, { width: 120, align: 'right' });
    y += 16;
  }
  if (note.memo) {
    y += 8;
    doc.font('Regular').fontSize(9.5).fillColor(ink).text(note.memo, left, y, { width });
    y = doc.y + 4;
  }
  y += 10;
  doc.font('Regular').fontSize(8).fillColor(muted);
  doc.text(
    `${note.testMode ? 'TEST MODE — no real money moves · ' : ''}Amounts in ${note.currency}; dates in ${note.timeZone}. Credit note ${note.id}.`,
    left,
    y,
    { width },
  );
  doc.end();
  return finished;
}
