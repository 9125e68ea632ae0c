import { createHmac } from 'node:crypto';

/** The keys derived from a secret, by secret and purpose: derived once per process, not per link (a renewal signs three). */
const derivedKeys = new Map<string, Buffer>();
function derivedKey(secret: string, purpose: string): Buffer {
  const name = `${purpose}\0${secret}`;
  let key = derivedKeys.get(name);
  if (!key) {
    key = createHmac('sha256', secret).update(purpose).digest();
    derivedKeys.set(name, key);
  }
  return key;
}

/** HMAC-SHA256 of the invoice id under a key of its own, derived from AUTH_SECRET. Never expires; rotating AUTH_SECRET revokes every link. */
export function invoicePdfToken(secret: string, invoiceId: string): string {
  return createHmac('sha256', derivedKey(secret, 'invoice-pdf-links')).update(invoiceId).digest('base64url');
}

/** The signed link of an invoice's PDF (the `pdf` field of an invoice): it opens without an API key. */
export function signedInvoicePdfUrl(publicUrl: string, secret: string, invoiceId: string): string {
  return `${publicUrl}/invoices/${invoiceId}/pdf?token=${invoicePdfToken(secret, invoiceId)}`;
}

/** The pay link of a one-off send_invoice invoice: its own key (not the PDF's), so a PDF link never pays and a pay link never downloads. */
export function invoicePayToken(secret: string, invoiceId: string): string {
  const key = createHmac('sha256', secret).update('invoice-pay-links').digest();
  return createHmac('sha256', key).update(invoiceId).digest('base64url');
}

/** The hosted page where the customer pays a one-off invoice (api/routes/one-off-invoices.ts), from its email. */
export function signedInvoicePayUrl(publicUrl: string, secret: string, invoiceId: string): string {
  return `${publicUrl}/invoices/${invoiceId}/pay?token=${invoicePayToken(secret, invoiceId)}`;
}
