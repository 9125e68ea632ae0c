/**
 * The receipt of a paid payment request as a PDF (GET /pay/{token}/receipt.pdf, linked
 * from the receipt email): the seller, who paid, what for, when and how much. Drawn like
 * the invoice PDF (domain/invoice-pdf.ts): pdfkit, DejaVu Sans embedded, dates in the
 * account's language and time zone, a TEST MODE mark where no real money moved.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import PDFDocument from 'pdfkit';
import { formatMoney } from './money.ts';
import { dateTimeFormat } from './intl-formats.ts';

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

const require = createRequire(import.meta.url);
let fonts: { regular: Buffer; bold: Buffer } | undefined;
const ink = '#1a1a1a';
const muted = '#6b6b6b';
const rule = '#d9d9d9';

function dateFormat(locale: string, timeZone: string): Intl.DateTimeFormat {
  try {
    return dateTimeFormat(locale, { dateStyle: 'long', timeStyle: 'short', timeZone });
  } catch {
    return dateTimeFormat('en-US', { dateStyle: 'long', timeStyle: 'short', timeZone: 'UTC' });
  }
}

export function renderReceiptPdf(receipt: ReceiptPdfInput): Promise<Buffer> {
  fonts ??= {
    regular: readFileSync(require.resolve('dejavu-fonts-ttf/ttf/DejaVuSans.ttf')),
    bold: readFileSync(require.resolve('dejavu-fonts-ttf/ttf/DejaVuSans-Bold.ttf')),
  };
  const margin = 50;
  const doc = new PDFDocument({
    size: 'A4',
    margins: { top: margin, bottom: margin, left: margin, right: margin },
    info: { Title: `Receipt ${receipt.id}`, Author: receipt.seller.name, Subject: `Receipt from ${receipt.seller.name}`, CreationDate: receipt.paidAt },
  });
  doc.registerFont('Regular', fonts.regular);
  doc.registerFont('Bold', fonts.bold);
  const chunks: Buffer[] = [];
  doc.on('data', (chunk: Buffer) => chunks.push(chunk));
  const finished = new Promise<Buffer>((resolve, reject) => {
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
  });

  const amount = formatMoney(receipt.amount, receipt.currency, receipt.locale);
  const paidOn = dateFormat(receipt.locale, receipt.timeZone).format(receipt.paidAt);
  const left = margin;
  const width = doc.page.width - 2 * margin;

  if (receipt.brand) doc.rect(0, 0, doc.page.width, 8).fill(receipt.brand.color);
  doc.font('Bold').fontSize(24).fillColor(ink).text('Receipt', left, margin, { lineBreak: false });
  const titleWidth = doc.widthOfString('Receipt');
  doc.font('Bold').fontSize(8);
  const badge = (x: number, label: string, color: string) => {
    const w = doc.widthOfString(label) + 14;
    doc.roundedRect(x, margin + 8, w, 16, 3).fill(color);
    doc.fillColor('#ffffff').text(label, x, margin + 12.5, { width: w, align: 'center', lineBreak: false });
    return w;
  };
  const paidWidth = badge(left + titleWidth + 12, 'PAID', '#15803d');
  if (receipt.testMode) badge(left + titleWidth + 12 + paidWidth + 6, 'TEST MODE', '#f59e0b');
  let letterheadY = margin + 8;
  if (receipt.brand?.logo) {
    try {
      doc.image(receipt.brand.logo, left + width / 2, margin - 10, { fit: [width / 2, 34], align: 'right' });
      letterheadY = margin + 30;
    } catch {
      // A logo pdfkit cannot read leaves the name alone.
    }
  }
  doc.font('Bold').fontSize(13).fillColor(receipt.brand?.color ?? ink).text(receipt.seller.name, left + width / 2, letterheadY, { width: width / 2, align: 'right' });

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
    doc.font('Bold').fillColor(ink).text(value, left + 120, y, { width: width - 120 });
    y = Math.max(doc.y, y + 15) + 2;
  }
  y += 10;
  doc.moveTo(left, y).lineTo(left + width, y).lineWidth(0.5).strokeColor(rule).stroke();
  doc.font('Regular').fontSize(8).fillColor(muted);
  const footer = `${receipt.testMode ? 'TEST MODE — no real money moves · ' : ''}Amounts in ${receipt.currency}; dates in ${receipt.timeZone}. Payment request ${receipt.id}.`;
  doc.text(footer, left, y + 8, { width });
  doc.end();
  return finished;
}
