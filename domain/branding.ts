/**
 * An account's branding (docs/dashboard.md#branding): the business name, a brand colour and
 * a logo its customers see on the pay page, the customer portal, emails and invoice PDFs.
 * Pure rules: what a valid colour and logo are, and the brand a page or email uses.
 */

export interface BrandingSettings {
  /** Shown instead of the account's name; null: the account's name. */
  business_name?: string | null;
  /** `#rrggbb`; null: the default. */
  brand_color?: string | null;
  /** The uploaded logo (its bytes are in account_logos): content hash, type and size. */
  logo?: { sha256: string; content_type: LogoContentType; size: number } | null;
}

/** What every page and email uses. */
export interface Brand {
  name: string;
  color: string;
  /** Text readable on `color`. */
  onColor: string;
  /** Absolute URL of the logo the engine serves, or null. */
  logoUrl: string | null;
}

export const defaultBrandColor = '#1a56db';
export const brandColorPattern = /^#[0-9a-fA-F]{6}$/;
export const logoContentTypes = ['image/png', 'image/jpeg'] as const;
export type LogoContentType = (typeof logoContentTypes)[number];
/** Uploaded logos are at most this big (below the API's body limit). */
export const maxLogoBytes = 64 * 1024;

/** The image type the bytes really are (PNG or JPEG by their signature), or null. SVG is refused: it can carry scripts. */
export function sniffLogo(bytes: Uint8Array): LogoContentType | null {
  if (bytes.length >= 8 && [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a].every((b, i) => bytes[i] === b))
    return 'image/png';
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  return null;
}

/** Black or white text, whichever contrasts more with `hex` (WCAG relative luminance). */
export function textColorOn(hex: string): string {
  const channel = (i: number) => {
    const c = parseInt(hex.slice(1 + 2 * i, 3 + 2 * i), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const luminance = 0.2126 * channel(0) + 0.7152 * channel(1) + 0.0722 * channel(2);
  // Contrast with white (1.05 / (L + 0.05)) against contrast with near-black #111827 (L ≈ 0.012).
  return 1.05 / (luminance + 0.05) >= (luminance + 0.05) / 0.062 ? '#ffffff' : '#111827';
}

/** The path the engine serves an account's logo at; the hash makes each version its own URL. */
export const logoPath = (accountId: string, sha256: string) => `/branding/${accountId}/logo/${sha256.slice(0, 16)}`;

export function brandOf(
  account: { id: string; name: string; settings: { branding?: BrandingSettings } },
  publicUrl: string,
): Brand {
  const branding = account.settings.branding ?? {};
  const color =
    branding.brand_color && brandColorPattern.test(branding.brand_color)
      ? branding.brand_color.toLowerCase()
      : defaultBrandColor;
  return {
    name: branding.business_name?.trim() || account.name,
    color,
    onColor: textColorOn(color),
    logoUrl: branding.logo ? `${publicUrl.replace(/\/$/, '')}${logoPath(account.id, branding.logo.sha256)}` : null,
  };
}
