import { extractText, getDocumentProxy } from 'unpdf';
import { describe, expect, it } from 'vitest';

import { invoiceReceiptEmail } from '../domain/email-templates.ts';
import { renderInvoicePdf } from '../domain/invoice-pdf.ts';
import { formatPeriod, humanizeInstants } from '../domain/locale.ts';
import { fromHeader } from '../services/email/mailer.ts';
import { pdfFonts } from '../services/invoices/pdf.ts';

/** What customers read: the merchant's name as sender, human dates instead of ISO timestamps. */
describe('customer-facing emails and PDFs', () => {
  it("From is the account name with MAIL_FROM's address, on one line", () => {
    expect(fromHeader('Billing <billing@localhost>', 'Acme')).toEqual({ name: 'Acme', address: 'billing@localhost' });
    expect(fromHeader('billing@localhost', 'Acme')).toEqual({ name: 'Acme', address: 'billing@localhost' });
    expect(fromHeader('Billing <billing@localhost>', 'Evil\r\nBcc: x@y')).toEqual({
      name: 'Evil Bcc: x@y',
      address: 'billing@localhost',
    });
    expect(fromHeader('Billing <billing@localhost>')).toBe('Billing <billing@localhost>');
  });

  it("periods and instants in line descriptions read as dates in the account's timezone and language", () => {
    const start = new Date('2027-01-31T12:00:00.000Z');
    const end = new Date('2027-02-28T12:00:00.000Z');
    expect(formatPeriod(start, end)).toBe('Jan 31, 2027 – Feb 28, 2027');
    // Past midnight in Tokyo.
    expect(formatPeriod(new Date('2027-01-31T20:00:00Z'), end, { timeZone: 'Asia/Tokyo' })).toBe(
      'Feb 1, 2027 – Feb 28, 2027',
    );
    expect(formatPeriod(start, end, { locale: 'fr' })).toBe('31 janv. 2027 – 28 févr. 2027');
    expect(humanizeInstants('Unused time on Pro after 2027-01-31T00:00:00.000Z')).toBe(
      'Unused time on Pro after Jan 31, 2027',
    );
    expect(humanizeInstants('No dates here')).toBe('No dates here');
  });

  it('a receipt lists each line with its period, not an ISO timestamp', () => {
    const email = invoiceReceiptEmail({
      accountName: 'Acme',
      customerName: 'Ada',
      amount: '$49.00',
      invoiceNumber: 'ACME-0001',
      paidAt: new Date('2027-01-31T12:00:00Z'),
      lines: [{ description: 'Team', period: 'Jan 31, 2027 – Feb 28, 2027', amount: '$49.00' }],
      pdfUrl: 'http://localhost/invoices/inv_1/pdf?token=t',
    });
    expect(email.text).toContain('Team (Jan 31, 2027 – Feb 28, 2027): $49.00');
    expect(email.text).toContain('Your invoice as a PDF: http://localhost/invoices/inv_1/pdf?token=t');
  });

  it('the invoice PDF shows human dates for the line period and inside descriptions', async () => {
    const at = new Date('2027-01-31T00:00:00.000Z');
    const end = new Date('2027-02-28T00:00:00.000Z');
    const pdf = await renderInvoicePdf(
      {
        id: 'inv_1',
        number: 'ACME-0001',
        status: 'paid',
        currency: 'USD',
        livemode: true,
        issuedAt: at,
        paidAt: at,
        voidedAt: null,
        markedUncollectibleAt: null,
        periodStart: at,
        periodEnd: end,
        subscriptionId: null,
        lines: [
          {
            description: `Unused time on Pro after ${at.toISOString()}`,
            quantity: 1,
            unitAmount: -500,
            amount: -500,
            periodStart: at,
            periodEnd: end,
            proration: true,
          },
        ],
        subtotal: -500,
        total: -500,
        amountDue: 0,
        amountPaid: 0,
        amountRemaining: 0,
        seller: { name: 'Acme', email: null },
        billTo: { name: 'Ada', email: null },
        timeZone: 'UTC',
      },
      pdfFonts(),
    );
    const { text } = await extractText(await getDocumentProxy(new Uint8Array(pdf)), { mergePages: true });
    const flat = text.replace(/\s+/g, ' ');
    expect(flat).toContain('Unused time on Pro after Jan 31, 2027');
    expect(flat).toContain('Jan 31, 2027 – Feb 28, 2027');
    expect(flat).not.toContain('2027-01-31T');
  });
});
