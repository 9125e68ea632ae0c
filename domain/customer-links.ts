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
  /** When the token these claims were read from expires (verify* set it): a link minted from them never outlives it. */
  expiresAt?: Date;
  /** A billing-details link the portal handed out (its page links back to the portal, until the portal session ends). */
  fromPortal?: boolean;
}

export const billingLinkTtlDays = 30;
/** The customer portal's link (portalUrl) lasts a week: a new one is a request (or an email) away. */
export const portalLinkTtlDays = 7;
const issuer = 'billing-engine';
const audience = 'billing-details';
const portalAudience = 'customer-portal';

export interface CustomerLinks {
  /**
   * The page where the customer updates their payment method: for billingLinkTtlDays, or
   * until `claims.expiresAt` when that is sooner (a link minted from a 7-day portal
   * session ends with the session).
   */
  billingDetailsUrl(claims: CustomerLinkClaims): Promise<string>;
  verifyBillingDetailsToken(token: string): Promise<CustomerLinkClaims | null>;
  /** The customer portal (the dashboard's /dashboard/portal): the token rides in the fragment, so it reaches no server log. */
  portalUrl(claims: CustomerLinkClaims): Promise<{ url: string; token: string; expiresAt: Date }>;
  verifyPortalToken(token: string): Promise<CustomerLinkClaims | null>;
  /** The signed link of an invoice's PDF, as the invoice's `pdf` field has it (events and receipts carry it). */
  invoicePdfUrl(invoiceId: string): string;
  /** PUBLIC_URL, for links built elsewhere (payment_url in payment request events). */
  publicUrl: string;
}

export function createCustomerLinks(config: { publicUrl: string; secret: string }): CustomerLinks {
  const key = createHash('sha256').update(`customer-links:${config.secret}`).digest();
  return {
    async billingDetailsUrl(claims) {
      const ownTtl = Math.floor(Date.now() / 1000) + billingLinkTtlDays * 86_400;
      const expires = claims.expiresAt ? Math.min(ownTtl, Math.floor(claims.expiresAt.getTime() / 1000)) : ownTtl;
      const token = await new SignJWT({
        acct: claims.accountId,
        lm: claims.livemode,
        ...(claims.fromPortal ? { pt: true } : {}),
      })
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject(claims.customerId)
        .setIssuer(issuer)
        .setAudience(audience)
        .setIssuedAt()
        .setExpirationTime(expires)
        .sign(key);
      return `${config.publicUrl}/billing/${token}`;
    },
    async portalUrl(claims) {
      // A link back to the portal from a page the portal opened ends with that portal session, never later.
      const ownTtl = Date.now() + portalLinkTtlDays * 86_400_000;
      const expiresAt = new Date(
        Math.floor((claims.expiresAt ? Math.min(ownTtl, claims.expiresAt.getTime()) : ownTtl) / 1000) * 1000,
      );
      const token = await new SignJWT({ acct: claims.accountId, lm: claims.livemode })
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject(claims.customerId)
        .setIssuer(issuer)
        .setAudience(portalAudience)
        .setIssuedAt()
        .setExpirationTime(Math.floor(expiresAt.getTime() / 1000))
        .sign(key);
      return { url: `${config.publicUrl}/dashboard/portal#${token}`, token, expiresAt };
    },
    async verifyPortalToken(token) {
      return verify(token, portalAudience);
    },
    invoicePdfUrl: (invoiceId) => signedInvoicePdfUrl(config.publicUrl, config.secret, invoiceId),
    publicUrl: config.publicUrl,
    async verifyBillingDetailsToken(token) {
      return verify(token, audience);
    },
  };

  async function verify(token: string, expected: string): Promise<CustomerLinkClaims | null> {
    try {
      const { payload } = await jwtVerify(token, key, { issuer, audience: expected, algorithms: ['HS256'] });
      if (typeof payload.sub !== 'string' || typeof payload.acct !== 'string' || typeof payload.lm !== 'boolean')
        return null;
      return {
        customerId: payload.sub,
        accountId: payload.acct,
        livemode: payload.lm,
        ...(typeof payload.exp === 'number' ? { expiresAt: new Date(payload.exp * 1000) } : {}),
        ...(payload.pt === true ? { fromPortal: true } : {}),
      };
    } catch {
      return null;
    }
  }
}
