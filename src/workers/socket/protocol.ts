/**
 * The event socket's client side of the protocol (CONTRACT sections 7 and 11), free of I/O:
 * splits received text into messages and checks a `<svc_id>:<key>` message against a key.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Splits a byte stream into messages: a message is a line ended by `\n` (a `\r` before it is
 * dropped). Text without a newline stays pending; the caller decides when pending text counts as
 * a message (`takePending`, the socket's 50 ms rule). `push` reports `overflow` once a line grows
 * past `maxLine` characters, and the connection should then be closed.
 */
export class LineSplitter {
  private pending = '';

  constructor(private readonly maxLine: number) {}

  push(chunk: string): { lines: string[]; overflow: boolean } {
    const lines: string[] = [];
    let text = this.pending + chunk;
    let nl: number;
    while ((nl = text.indexOf('\n')) !== -1) {
      if (nl > this.maxLine) return { lines, overflow: true };
      lines.push(stripCr(text.slice(0, nl)));
      text = text.slice(nl + 1);
    }
    this.pending = text;
    return { lines, overflow: text.length > this.maxLine };
  }

  get hasPending(): boolean {
    return this.pending.length > 0;
  }

  /** The pending text as a whole message (first message without a newline). */
  takePending(): string {
    const s = stripCr(this.pending);
    this.pending = '';
    return s;
  }
}

const stripCr = (s: string) => (s.endsWith('\r') ? s.slice(0, -1) : s);

/**
 * `<svc_id>:<key>` or `<svc_id>:<key>@<cursor>` (CONTRACT section 14) → its parts, or null when it
 * is not of that form. Keys hold no `@`, so the first `@` after the key starts the cursor.
 */
export function parseAuth(message: string): { svcId: number; key: string; cursor?: string } | null {
  const colon = message.indexOf(':');
  if (colon <= 0) return null;
  const id = message.slice(0, colon).trim();
  if (!/^\d{1,15}$/.test(id)) return null;
  const rest = message.slice(colon + 1);
  const at = rest.indexOf('@');
  if (at === -1) return { svcId: Number(id), key: rest };
  return { svcId: Number(id), key: rest.slice(0, at), cursor: rest.slice(at + 1).trim() };
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/**
 * Constant-time comparison of a presented key with the service's key (both hashed first, so
 * neither their contents nor their lengths leak through timing). A service without a key
 * refuses every key.
 */
export function keyMatches(presented: string, expected: string | null | undefined): boolean {
  if (typeof expected !== 'string' || expected.length === 0) {
    // Same work either way.
    timingSafeEqual(digest(presented), digest(presented));
    return false;
  }
  return timingSafeEqual(digest(presented), digest(expected));
}
