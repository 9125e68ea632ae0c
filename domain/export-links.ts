import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The signed link of an export's file: HMAC-SHA256 of the export id and the expiry
 * (unix seconds) under a key of its own derived from AUTH_SECRET. It opens the file
 * without a token until it expires; rotating AUTH_SECRET revokes every link.
 */
export function exportFileSignature(secret: string, exportId: string, expires: number): string {
  const key = createHmac('sha256', secret).update('export-file-links').digest();
  return createHmac('sha256', key).update(`${exportId}.${expires}`).digest('base64url');
}

export function signedExportFileUrl(publicUrl: string, secret: string, exportId: string, expires: number): string {
  return `${publicUrl}/exports/${exportId}/file?expires=${expires}&signature=${exportFileSignature(secret, exportId, expires)}`;
}

/** 'ok', or why the link does not open: a bad signature, or one that expired. */
export function checkExportFileSignature(
  secret: string,
  exportId: string,
  expires: number,
  signature: string,
  nowMs: number,
): 'ok' | 'invalid' | 'expired' {
  const expected = Buffer.from(exportFileSignature(secret, exportId, expires));
  const given = Buffer.from(signature);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'invalid';
  return expires * 1000 <= nowMs ? 'expired' : 'ok';
}
