import { createHash } from 'node:crypto';
import { jwtVerify, SignJWT } from 'jose';
import { signedInvoicePdfUrl } from './invoice-links.ts';

/**
 * Links customers follow from emails without an account of their own: a signed,
 * expiring token names the customer, so the link is the credential (like
 * Stripe's hosted pages). Signed with a key derived from AUTH_SECRET for this
 * purpose only, so a link can never pass as an access token.
 */
export interface CustomerLinkClaims {
  customerId: string;
  accountId: string;
  livemode: boolean;
}

export const billingLinkTtlDays = 30;
const issuer = 'billing-engine';
const audience = 'billing-details';

export interface CustomerLinks {
  /** The page where the customer updates their payment method. */
  billingDetailsUrl(claims: CustomerLinkClaims): Promise<string>;
  verifyBillingDetailsToken(token: string): Promise<CustomerLinkClaims | null>;
  /** The signed link of an invoice's PDF, as the invoice's `pdf` field has it (events and receipts carry it). */
  invoicePdfUrl(invoiceId: string): string;
  /** PUBLIC_URL, for links built elsewhere (payment_url in payment request events). */
  publicUrl: string;
}

export function createCustomerLinks(config: { publicUrl: string; secret: string }): CustomerLinks {
  const key = createHash('sha256').update(`customer-links:${config.secret}`).digest();
  return {
    async billingDetailsUrl(claims) {
      const token = await new SignJWT({ acct: claims.accountId, lm: claims.livemode })
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject(claims.customerId)
        .setIssuer(issuer)
        .setAudience(audience)
        .setIssuedAt()
        .setExpirationTime(`${billingLinkTtlDays}d`)
        .sign(key);
      return `${config.publicUrl}/billing/${token}`;
    },
    invoicePdfUrl: (invoiceId) => signedInvoicePdfUrl(config.publicUrl, config.secret, invoiceId),
    publicUrl: config.publicUrl,
    async verifyBillingDetailsToken(token) {
      try {
        const { payload } = await jwtVerify(token, key, { issuer, audience, algorithms: ['HS256'] });
        if (typeof payload.sub !== 'string' || typeof payload.acct !== 'string' || typeof payload.lm !== 'boolean') return null;
        return { customerId: payload.sub, accountId: payload.acct, livemode: payload.lm };
      } catch {
        return null;
      }
    },
  };
}
