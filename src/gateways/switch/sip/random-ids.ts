/**
 * Unguessable SIP identifiers (branches, tags, Call-IDs: a peer that could guess them could forge
 * responses in our transactions and dialogs). Drawn from a pool of random bytes filled 4 KiB at a
 * time: a randomBytes call per identifier (a few per message) showed in the SIP bench's profile.
 */
import { randomFillSync } from 'node:crypto';

const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let used = POOL_BYTES;

/** `n` fresh random bytes (n <= 64), base64url. */
export function randomBase64url(n: number): string {
  return take(n).toString('base64url');
}

/** `n` fresh random bytes (n <= 64), hex. */
export function randomHex(n: number): string {
  return take(n).toString('hex');
}

function take(n: number): Buffer {
  if (used + n > POOL_BYTES) {
    randomFillSync(pool);
    used = 0;
  }
  const out = pool.subarray(used, used + n);
  used += n;
  return out;
}
