/**
 * Branding (domain/branding.ts): changing it, and the logo's bytes for the page that serves
 * them and for invoice PDFs. The name and colour live in accounts.settings.branding; the logo
 * in account_logos, one row per account.
 */
import { createHash } from 'node:crypto';

import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';

import { Account, AccountLogo } from '../../db/entities/index.ts';
import { brandColorPattern, type BrandingSettings, maxLogoBytes, sniffLogo } from '../../domain/branding.ts';
import { ApiError } from '../../domain/errors.ts';
import { checkLogoImage } from '../../domain/logo-image.ts';
import { recordAccountEvent } from './events.ts';

export interface BrandingChange {
  business_name?: string | null;
  brand_color?: string | null;
  /** Base64 (or a data: URL) of a PNG or JPEG; null removes the logo. */
  logo?: string | null;
}

/** Decodes and checks an uploaded logo: base64 or a data: URL, PNG or JPEG by its bytes (decoding whole), at most maxLogoBytes. */
export function decodeLogo(value: string): { bytes: Buffer; contentType: 'image/png' | 'image/jpeg' } {
  const dataUrl = /^data:([\w/+.-]+);base64,(.*)$/s.exec(value);
  const base64 = (dataUrl ? dataUrl[2]! : value).replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(base64) || base64.length === 0)
    throw new ApiError('invalid_request', 'logo: must be a PNG or JPEG image in base64 (or a data: URL).');
  const bytes = Buffer.from(base64, 'base64');
  if (bytes.length > maxLogoBytes)
    throw new ApiError(
      'invalid_request',
      `logo: at most ${maxLogoBytes / 1024} KB; this one is ${Math.ceil(bytes.length / 1024)} KB.`,
    );
  const contentType = sniffLogo(bytes);
  if (!contentType)
    throw new ApiError('invalid_request', 'logo: must be a PNG or JPEG image (SVG and other types are not accepted).');
  if (dataUrl && dataUrl[1] !== contentType)
    throw new ApiError('invalid_request', `logo: the data URL says ${dataUrl[1]} but the bytes are ${contentType}.`);
  // The signature is only the first bytes: the whole image must decode (domain/logo-image.ts).
  const image = checkLogoImage(bytes, contentType);
  if (!image.ok)
    throw new ApiError(
      'invalid_request',
      `logo: not a valid ${contentType === 'image/png' ? 'PNG' : 'JPEG'} image: ${image.problem}.`,
    );
  return { bytes, contentType };
}

/** Applies a change to an account's branding (all checks first: a refusal changes nothing). */
export async function changeBranding(em: EntityManager, accountId: string, change: BrandingChange): Promise<Account> {
  if (change.brand_color != null && !brandColorPattern.test(change.brand_color))
    throw new ApiError(
      'invalid_request',
      `brand_color: must be a hex colour like #1a56db, got "${change.brand_color}".`,
    );
  const logo = typeof change.logo === 'string' ? decodeLogo(change.logo) : change.logo;
  return em.transactional(async (tx) => {
    const account = await tx.findOneOrFail(
      Account,
      { id: accountId },
      { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
    );
    const branding: BrandingSettings = { ...(account.settings.branding ?? {}) };
    if (change.business_name !== undefined) branding.business_name = change.business_name?.trim() || null;
    if (change.brand_color !== undefined) branding.brand_color = change.brand_color?.toLowerCase() ?? null;
    if (logo === null) {
      branding.logo = null;
      await tx.nativeDelete(AccountLogo, { accountId });
    } else if (logo) {
      const sha256 = createHash('sha256').update(logo.bytes).digest('hex');
      branding.logo = { sha256, content_type: logo.contentType, size: logo.bytes.length };
      await tx.upsert(AccountLogo, {
        accountId,
        contentType: logo.contentType,
        data: logo.bytes,
        sha256,
        size: logo.bytes.length,
        updatedAt: new Date(),
      });
    }
    account.settings = { ...account.settings, branding };
    await tx.flush();
    // Account-wide, like the account itself: account.updated in both modes, on the same transaction.
    await recordAccountEvent(tx, account, 'account.updated');
    return account;
  });
}

/** The logo's bytes, or null. */
export async function loadLogo(em: EntityManager, accountId: string): Promise<AccountLogo | null> {
  return em.findOne(AccountLogo, { accountId });
}
