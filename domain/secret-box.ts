/**
 * Encryption at rest for secrets the engine must read back (webhook signing
 * secrets: signing needs the secret itself, so it cannot be hashed). AES-256-GCM
 * under a key derived from AUTH_SECRET for this purpose only. Changing
 * AUTH_SECRET makes sealed secrets unreadable: rotate each webhook secret after.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

export interface SecretBox {
  seal(plain: string): string;
  /** Throws when the value was not sealed with this key. */
  open(sealed: string): string;
}

/** `purpose` keeps keys apart: webhook secrets (the default) and bank account numbers (`bank-accounts`) are sealed under different keys. */
export function createSecretBox(authSecret: string, purpose = 'webhook-secrets'): SecretBox {
  const key = createHash('sha256').update(`${purpose}:${authSecret}`).digest();
  return {
    seal(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return `v1.${iv.toString('base64url')}.${cipher.getAuthTag().toString('base64url')}.${data.toString('base64url')}`;
    },
    open(sealed) {
      const [version, iv, tag, data] = sealed.split('.');
      if (version !== 'v1' || !iv || !tag || data === undefined) throw new Error('not a sealed secret');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
    },
  };
}
