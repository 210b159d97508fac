/**
 * HTTP digest authentication as SIP uses it (RFC 3261 section 22, RFC 2617, MD5): the challenge,
 * nonces that carry their own time and a MAC (no table to fill; an expired one is `stale=true`,
 * a forged one is a fresh challenge), and the check of an Authorization header.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const NONCE_TTL_MS = 5 * 60_000;

const md5 = (s: string) => createHash('md5').update(s).digest('hex');

export class Nonces {
  private readonly key = randomBytes(32);

  constructor(private readonly now: () => number = Date.now) {}

  make(): string {
    const t = this.now().toString(36);
    const salt = randomBytes(6).toString('hex');
    return `${t}.${salt}.${this.mac(`${t}.${salt}`)}`;
  }

  /** 'ok', 'stale' (ours but expired), or 'bad' (not ours). */
  check(nonce: string): 'ok' | 'stale' | 'bad' {
    const [t, salt, mac, extra] = nonce.split('.');
    if (!t || !salt || !mac || extra !== undefined) return 'bad';
    const want = Buffer.from(this.mac(`${t}.${salt}`));
    const got = Buffer.from(mac);
    if (want.length !== got.length || !timingSafeEqual(want, got)) return 'bad';
    const age = this.now() - parseInt(t, 36);
    return age >= 0 && age <= NONCE_TTL_MS ? 'ok' : 'stale';
  }

  private mac(s: string) {
    return createHmac('sha256', this.key).update(s).digest('base64url').slice(0, 22);
  }
}

export function challenge(realm: string, nonce: string, stale: boolean): string {
  return `Digest realm="${realm}", nonce="${nonce}", algorithm=MD5, qop="auth"${stale ? ', stale=true' : ''}`;
}

/** The parameters of a `Digest ...` Authorization header; null when it is not one. */
export function parseAuthorization(v: string | undefined): Record<string, string> | null {
  if (!v) return null;
  const m = /^\s*Digest\s+(.*)$/is.exec(v);
  if (!m) return null;
  const out: Record<string, string> = {};
  const re = /([A-Za-z0-9_-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))\s*(?:,|$)/g;
  for (const p of m[1]!.matchAll(re)) out[p[1]!.toLowerCase()] = p[2] !== undefined ? p[2].replace(/\\(.)/g, '$1') : p[3]!;
  return out;
}

/** Whether the Authorization parameters answer the challenge for this password (RFC 2617 3.2.2). */
export function digestMatches(auth: Record<string, string>, method: string, password: string): boolean {
  const { username, realm, nonce, uri, response, qop, nc, cnonce } = auth;
  if (!username || !realm || !nonce || !uri || !response) return false;
  if (auth.algorithm && auth.algorithm.toUpperCase() !== 'MD5') return false;
  const ha1 = md5(`${username}:${realm}:${password}`);
  const ha2 = md5(`${method}:${uri}`);
  const want = qop ? (qop === 'auth' && nc && cnonce ? md5(`${ha1}:${nonce}:${nc}:${cnonce}:auth:${ha2}`) : '') : md5(`${ha1}:${nonce}:${ha2}`);
  const a = Buffer.from(want);
  const b = Buffer.from(response.toLowerCase());
  return want !== '' && a.length === b.length && timingSafeEqual(a, b);
}
