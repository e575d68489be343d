import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/** An encrypted value as stored in JSON documents. */
export interface EncryptedValue {
  $enc: string;
}

export function isEncrypted(value: unknown): value is EncryptedValue {
  return typeof value === 'object' && value !== null && typeof (value as EncryptedValue).$enc === 'string';
}

/** AES-256-GCM of the JSON of `value`: iv(12) | tag(16) | ciphertext, base64. */
export function encryptValue(key: Buffer, value: unknown): EncryptedValue {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  return { $enc: Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64') };
}

export function decryptValue<T = unknown>(key: Buffer, value: EncryptedValue): T {
  const raw = Buffer.from(value.$enc, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  const text = Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  return JSON.parse(text) as T;
}

export function sha256Hex(text: string | Buffer): string {
  return createHash('sha256').update(text).digest('hex');
}
