/** Standard Webhooks signing (CONTRACT section 7). */
import { createHmac } from 'node:crypto';

/** The HMAC key of a secret: the base64 part of a `whsec_` secret, else the secret's UTF-8 bytes. */
export function signingKey(secret: string): Buffer {
  if (secret.startsWith('whsec_')) return Buffer.from(secret.slice('whsec_'.length), 'base64');
  return Buffer.from(secret, 'utf8');
}

/** `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`. */
export function signature(key: Buffer, id: string, timestampS: number, body: string): string {
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampS}.${body}`).digest('base64')}`;
}

/** The three headers of a signed delivery. */
export function signedHeaders(secret: string, id: string, timestampS: number, body: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampS),
    'webhook-signature': signature(signingKey(secret), id, timestampS, body),
  };
}
