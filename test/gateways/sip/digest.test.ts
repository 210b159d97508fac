/** Digest authentication of REGISTER (RFC 2617 as RFC 3261 22 uses it): nonces and responses. */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { NONCE_TTL_MS, Nonces, challenge, digestMatches, parseAuthorization } from '../../../src/gateways/switch/sip/digest.js';

const md5 = (s: string) => createHash('md5').update(s).digest('hex');

describe('SIP digest', () => {
  it('a nonce is ours until it expires (then stale), and a forged or altered one is bad', () => {
    let now = 1_000_000;
    const n = new Nonces(() => now);
    const nonce = n.make();
    expect(n.check(nonce)).toBe('ok');
    now += NONCE_TTL_MS + 1;
    expect(n.check(nonce)).toBe('stale');
    expect(n.check(nonce.replace(/^./, (c) => (c === 'a' ? 'b' : 'a')))).toBe('bad');
    expect(new Nonces(() => now).check(nonce)).toBe('bad');
    expect(n.check('garbage')).toBe('bad');
    expect(challenge('pbx.test', nonce, true)).toBe(`Digest realm="pbx.test", nonce="${nonce}", algorithm=MD5, qop="auth", stale=true`);
  });

  it('checks the response with and without qop=auth, and only for the right password', () => {
    const ha1 = md5('asha:pbx.test:secret-1');
    const ha2 = md5('REGISTER:sip:pbx.test');
    const withQop = parseAuthorization(`Digest username="asha", realm="pbx.test", nonce="abc", uri="sip:pbx.test", qop=auth, nc=00000001, cnonce="xyz", algorithm=MD5, response="${md5(`${ha1}:abc:00000001:xyz:auth:${ha2}`)}"`)!;
    expect(withQop.username).toBe('asha');
    expect(digestMatches(withQop, 'REGISTER', 'secret-1')).toBe(true);
    expect(digestMatches(withQop, 'REGISTER', 'secret-2')).toBe(false);
    expect(digestMatches(withQop, 'INVITE', 'secret-1')).toBe(false);
    const plain = parseAuthorization(`Digest username="asha",realm="pbx.test",nonce="abc",uri="sip:pbx.test",response="${md5(`${ha1}:abc:${ha2}`)}"`)!;
    expect(digestMatches(plain, 'REGISTER', 'secret-1')).toBe(true);
    expect(digestMatches({ ...plain, algorithm: 'SHA-256' }, 'REGISTER', 'secret-1')).toBe(false);
    expect(parseAuthorization('Basic YXNoYTpzZWNyZXQ=')).toBeNull();
  });
});
