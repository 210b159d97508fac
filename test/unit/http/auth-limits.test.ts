/** The failed-authentication limits and the request-rate key (src/http/auth/limits.ts). */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { AuthFailureLimiter, credentialKey, credentialKeys, rateKeySecret } from '../../../src/http/auth/limits.js';
import { dropRedisKeys } from '../../support/redis-keys.js';
import { loadConfig } from '../../../src/config.js';

const basic = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;
// The Redis the global setup found (test/support/redis-global.ts); without one that part is skipped.
const REDIS_URL = inject('redisUrl') ?? '';

describe('credentialKey', () => {
  const secret = rateKeySecret('token');
  it('one key per presented credential, never the password itself', () => {
    const right = credentialKey(basic('alice', 'correct horse'), '10.0.0.1', secret);
    expect(right).toMatch(/^u:alice\|[\w-]{16}$/);
    expect(right).not.toContain('correct');
    expect(credentialKey(basic('alice', 'correct horse'), '10.0.0.9', secret)).toBe(right);
    expect(credentialKey(basic('alice', 'wrong'), '10.0.0.1', secret)).not.toBe(right);
    expect(credentialKey(basic('alice', 'correct horse'), '10.0.0.1', rateKeySecret('other'))).not.toBe(right);
    expect(credentialKey('Bearer t1', '10.0.0.1', secret)).not.toBe(credentialKey('Bearer t2', '10.0.0.1', secret));
    expect(credentialKey(undefined, '10.0.0.1', secret)).toBe('ip:10.0.0.1');
  });
  it('remembered per header, the same keys', () => {
    const keyOf = credentialKeys(secret);
    for (let round = 0; round < 2; round++) {
      expect(keyOf(basic('alice', 'pw'), '10.0.0.1')).toBe(credentialKey(basic('alice', 'pw'), '10.0.0.1', secret));
      expect(keyOf('Bearer t', '10.0.0.1')).toBe(credentialKey('Bearer t', '10.0.0.1', secret));
      expect(keyOf('Basic !!!', '10.0.0.1')).toBe('ip:10.0.0.1');
      expect(keyOf('Basic !!!', '10.0.0.2')).toBe('ip:10.0.0.2');
      expect(keyOf(undefined, '10.0.0.3')).toBe('ip:10.0.0.3');
    }
  });
});

describe('AuthFailureLimiter', () => {
  it('refuses a credential from an address past its failures, refunds successes, leaves other addresses alone', async () => {
    const l = new AuthFailureLimiter({ perCredential: 3, perAddress: 100 });
    for (let i = 0; i < 5; i++) {
      expect(await l.attempt('u:a', '10.0.0.1')).toBeNull();
      await l.succeeded('u:a', '10.0.0.1');
    }
    for (let i = 0; i < 3; i++) expect(await l.attempt('u:a', '10.0.0.1')).toBeNull();
    const over = await l.attempt('u:a', '10.0.0.1');
    expect(over).toMatchObject({ status: 429, code: 'RATE_LIMITED' });
    expect(Number(over!.headers['Retry-After'])).toBeGreaterThanOrEqual(1);
    expect(l.refusal('u:a', '10.0.0.1')).not.toBeNull();
    expect(l.refusal('u:a', '10.0.0.2')).toBeNull();
    expect(l.refusal('u:b', '10.0.0.1')).toBeNull();
  });

  it('refuses every credential from an address past its failures in all', async () => {
    const l = new AuthFailureLimiter({ perCredential: 100, perAddress: 4 });
    for (let i = 0; i < 4; i++) expect(await l.attempt(`u:n${i}`, '10.0.0.1')).toBeNull();
    expect(await l.attempt('u:n9', '10.0.0.1')).not.toBeNull();
    expect(l.refusal('u:anyone', '10.0.0.1')).not.toBeNull();
    expect(l.refusal('op', '10.0.0.1')).not.toBeNull();
    expect(l.refusal('u:anyone', '10.0.0.2')).toBeNull();
  });

  it('verify: identical requests at once are one attempt; distinct guesses at once are each counted', async () => {
    const l = new AuthFailureLimiter({ perCredential: 3, perAddress: 100 });
    let checks = 0;
    const slowRight = () => new Promise<string | null>((r) => setTimeout(() => r(String(++checks)), 20));
    const same = await Promise.all(Array.from({ length: 20 }, () => l.verify('u:a', '10.0.0.1', 'Basic right', slowRight)));
    expect(new Set(same)).toEqual(new Set(['1']));
    const wrong = () => new Promise<null>((r) => setTimeout(() => r(null), 20));
    const guesses = await Promise.all(Array.from({ length: 10 }, (_, i) => l.verify('u:a', '10.0.0.1', `Basic guess-${i}`, wrong)));
    expect(guesses.filter((g) => g === null)).toHaveLength(3);
    expect(guesses.filter((g) => g !== null)).toHaveLength(7);
    for (const g of guesses) if (g !== null) expect(g).toMatchObject({ status: 429 });
  });

  it('0 turns the limits off', async () => {
    const l = new AuthFailureLimiter({ perCredential: 0, perAddress: 0 });
    for (let i = 0; i < 50; i++) await l.failed('u:a', '10.0.0.1');
    expect(l.refusal('u:a', '10.0.0.1')).toBeNull();
  });

  describe.skipIf(!REDIS_URL)('in Redis', () => {
    const prefix = `test-authfail-${randomUUID()}`;
    const clients: Redis[] = [];
    afterAll(async () => {
      for (const c of clients) c.disconnect();
      await dropRedisKeys(REDIS_URL, `${prefix}*`);
    });
    it('one count across processes: a second process refuses once the first used the budget', async () => {
      const open = () => {
        const r = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
        clients.push(r);
        return new AuthFailureLimiter({ perCredential: 3, perAddress: 100, redis: r, prefix });
      };
      const [p1, p2] = [open(), open()];
      for (let i = 0; i < 3; i++) expect(await p1.attempt('u:a', '10.0.0.1')).toBeNull();
      expect(await p2.attempt('u:a', '10.0.0.1')).toMatchObject({ status: 429 });
      expect(p2.refusal('u:a', '10.0.0.1')).not.toBeNull();
    });
  });
});

describe('TRUST_PROXY', () => {
  it('false by default; true, false, 1, 0 or proxy addresses and CIDRs', () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: '0' }).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1,::1,loopback' }).trustProxy).toBe('10.0.0.0/8,127.0.0.1,::1,loopback');
    for (const bad of ['2', 'proxy.example.com', '10.0.0.0/8/1', 'yes']) expect(() => loadConfig({ TRUST_PROXY: bad })).toThrow(/TRUST_PROXY/);
    expect(loadConfig({}).authFailuresPerMin).toBe(10);
    expect(loadConfig({}).authFailuresPerAddressPerMin).toBe(30);
  });
});
