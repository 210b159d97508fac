/**
 * Issue #29 item 7: strangers cannot lock the owner out. The request rate of CONTRACT 8 is per
 * presented credential; failed authentications count apart, per (credential, client address) and
 * per address. The server trusts X-Forwarded-For here (TRUST_PROXY=true), so one test process can
 * speak from several client addresses.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, OPERATOR_TOKEN, type TestServer } from '../support/server.js';
import { teamDoc } from '../support/fixtures.js';
import { until } from '../support/until.js';

const basic = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;

describe('failed authentications are counted apart', () => {
  let s: TestServer;
  const from = (address: string, authorization: string, path = '/api/v1/ping') => fetch(s.url + path, { headers: { authorization, 'x-forwarded-for': address } });
  beforeAll(async () => {
    s = await startServer({ RATE_LIMIT_RPS: '5', AUTH_FAILURES_PER_MIN: '5', AUTH_FAILURES_PER_ADDRESS_PER_MIN: '12', TRUST_PROXY: 'true' });
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() })).status).toBe(200);
  });
  afterAll(async () => {
    await s.stop();
  });

  it("a stranger's burst of wrong passwords costs the owner nothing; the stranger's address is held off", async () => {
    const stranger = '203.0.113.7';
    const burst = Array.from({ length: 30 }, (_, i) => from(stranger, basic('acme-admin', `guess-${i}`)));
    // The owner, elsewhere, right in the middle of the burst and after it.
    const during = from('198.51.100.2', basic('acme-admin', 's3cret-admin'));
    const statuses = (await Promise.all(burst)).map((r) => r.status);
    expect((await during).status).toBe(200);
    expect((await from('198.51.100.2', basic('acme-admin', 's3cret-admin'))).status).toBe(200);
    // At most AUTH_FAILURES_PER_MIN of the guesses were verified (and failed); the rest were refused.
    expect(statuses.filter((x) => x === 401).length).toBeLessThanOrEqual(5);
    expect(statuses.filter((x) => x === 429).length).toBeGreaterThanOrEqual(25);
    // From the stranger's address even the right password is refused now, with Retry-After.
    const held = await from(stranger, basic('acme-admin', 's3cret-admin'));
    expect(held.status).toBe(429);
    expect(await held.json()).toMatchObject({ isError: true, code: 'RATE_LIMITED' });
    expect(Number(held.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // Another user from that address is not held by acme-admin's count.
    expect((await from(stranger, basic('asha', 's3cret-asha'))).status).toBe(200);
  });

  it('many requests at once with the right password, first seen, are one attempt: no failure counted', async () => {
    const answers = await Promise.all(Array.from({ length: 20 }, () => from('198.51.100.6', basic('globex-admin', 's3cret-globex'), '/api/v1/ping')));
    // The request rate (5 a second per credential) refuses some; none is refused as a failure.
    for (const r of answers) if (r.status === 429) expect((await r.json()).message).not.toMatch(/failed/);
    expect(answers.map((r) => r.status)).toContain(200);
    // Once the request-rate window (1 s) ends, the credential goes on: a failure block would last a minute.
    await until(async () => (await from('198.51.100.6', basic('globex-admin', 's3cret-globex'))).status === 200, 'globex-admin answered again', 10_000, 200);
  });

  it('the per-credential request rate of CONTRACT 8 still holds for the owner', async () => {
    const answers = await Promise.all(Array.from({ length: 10 }, () => from('198.51.100.4', basic('bala', 's3cret-bala'))));
    const statuses = answers.map((r) => r.status);
    expect(statuses).toContain(429);
    expect(statuses.filter((x) => x === 200).length).toBeLessThanOrEqual(5);
  });

  it("an operator-token guesser does not get the real operator 429", async () => {
    const guesser = '203.0.113.8';
    const burst = Array.from({ length: 30 }, (_, i) => from(guesser, `Bearer guess-${i}`, '/metrics'));
    const during = from('198.51.100.3', `Bearer ${OPERATOR_TOKEN}`, '/metrics');
    const statuses = (await Promise.all(burst)).map((r) => r.status);
    expect((await during).status).toBe(200);
    expect(statuses).toContain(429);
    expect((await from(guesser, `Bearer ${OPERATOR_TOKEN}`, '/metrics')).status).toBe(429);
  });

  it('rotating unknown usernames from one address is limited', async () => {
    const rotator = '203.0.113.9';
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) statuses.push((await from(rotator, basic(`nobody-${i}`, 'pw'))).status);
    expect(statuses.filter((x) => x === 401).length).toBeLessThanOrEqual(12);
    expect(statuses.slice(-20)).toEqual(Array(20).fill(429));
    // Everyone else goes on.
    expect((await from('198.51.100.5', basic('acme-admin', 's3cret-admin'))).status).toBe(200);
  });
});
