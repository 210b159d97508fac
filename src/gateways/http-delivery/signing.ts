/** Standard Webhooks signing (CONTRACT section 7). */
import { createHmac } from 'node:crypto';

/** The HMAC key of a secret: the base64 part of a `whsec_` secret, else the secret's UTF-8 bytes. */
export function signingKey(secret: string): Buffer {
  if (secret.startsWith('whsec_')) return Buffer.from(secret.slice('whsec_'.length), 'base64');
  return Buffer.from(secret, 'utf8');
}

/** Keys of the secrets in use (a service's webhook, subscribers' auth keys): decoded once, not per delivery. */
const keys = new Map<string, Buffer>();
const KEYS_MAX = 10_000;

function keyOf(secret: string): Buffer {
  let key = keys.get(secret);
  if (!key) {
    if (keys.size >= KEYS_MAX) keys.delete(keys.keys().next().value!);
    keys.set(secret, (key = signingKey(secret)));
  }
  return key;
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
    'webhook-signature': signature(keyOf(secret), id, timestampS, body),
  };
}
