/**
 * The receipt of a paid payment request as a PDF (GET /pay/{token}/receipt.pdf, linked
 * from the receipt email): the seller, who paid, what for, when and how much. Drawn like
 * the invoice PDF (domain/invoice-pdf.ts): pdfkit, DejaVu Sans embedded, dates in the
 * account's language and time zone, a TEST MODE mark where no real money moved.
 */
import { dateTimeFormat } from './intl-formats.ts';
import { formatMoney } from './money.ts';
import { drawPdfHeader, ink, muted, pageMargin as margin, type PdfFonts, rule, startPdf } from './pdf-page.ts';

export interface ReceiptPdfInput {
  /** The payment request (preq_…). */
  id: string;
  amount: number;
  currency: string;
  reference: string | null;
  paidAt: Date;
  paidBy: string;
  seller: { name: string; email: string | null };
  brand?: { color: string; logo?: Buffer | null };
  /** The mode moves no real money: a TEST MODE mark and line. */
  testMode: boolean;
  /** IANA zone and BCP 47 language the dates are written in (the account's). */
  timeZone: string;
  locale: string;
}

function dateFormat(locale: string, timeZone: string): Intl.DateTimeFormat {
  try {
    return dateTimeFormat(locale, { dateStyle: 'long', timeStyle: 'short', timeZone });
  } catch {
    return dateTimeFormat('en-US', { dateStyle: 'long', timeStyle: 'short', timeZone: 'UTC' });
  }
}

export async function renderReceiptPdf(receipt: ReceiptPdfInput, fonts: PdfFonts): Promise<Buffer> {
  const { doc, finished } = await startPdf(
    {
      Title: `Receipt ${receipt.id}`,
      Author: receipt.seller.name,
      Subject: `Receipt from ${receipt.seller.name}`,
      CreationDate: receipt.paidAt,
    },
    fonts,
  );
  const amount = formatMoney(receipt.amount, receipt.currency, receipt.locale);
  const paidOn = dateFormat(receipt.locale, receipt.timeZone).format(receipt.paidAt);
  const left = margin;
  const width = doc.page.width - 2 * margin;

  drawPdfHeader(doc, {
    title: 'Receipt',
    badges: [
      { label: 'PAID', color: '#15803d' },
      ...(receipt.testMode ? [{ label: 'TEST MODE', color: '#f59e0b' }] : []),
    ],
    sellerName: receipt.seller.name,
    brand: receipt.brand ?? null,
  });

  let y = Math.max(doc.y, margin + 40) + 22;
  doc.font('Bold').fontSize(15).fillColor(ink).text(`${amount} paid on ${paidOn}`, left, y, { width });
  y = doc.y + 18;
  const facts: [string, string][] = [
    ...(receipt.reference ? [['Reference', receipt.reference] as [string, string]] : []),
    ['Amount paid', amount],
    ['Date paid', paidOn],
    ['Paid by', receipt.paidBy],
    ['Paid to', receipt.seller.email ? `${receipt.seller.name} (${receipt.seller.email})` : receipt.seller.name],
    ['Payment', receipt.id],
  ];
  for (const [label, value] of facts) {
    doc.font('Regular').fontSize(9.5).fillColor(muted).text(label, left, y, { width: 120, lineBreak: false });
    doc
      .font('Bold')
      .fillColor(ink)
      .text(value, left + 120, y, { width: width - 120 });
    y = Math.max(doc.y, y + 15) + 2;
  }
  y += 10;
  doc
    .moveTo(left, y)
    .lineTo(left + width, y)
    .lineWidth(0.5)
    .strokeColor(rule)
    .stroke();
  doc.font('Regular').fontSize(8).fillColor(muted);
  const footer = `${receipt.testMode ? 'TEST MODE — no real money moves · ' : ''}Amounts in ${receipt.currency}; dates in ${receipt.timeZone}. Payment request ${receipt.id}.`;
  doc.text(footer, left, y + 8, { width });
  doc.end();
  return finished;
}
