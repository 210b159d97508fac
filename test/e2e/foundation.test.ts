import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleDoc, startProvisioned, startServer, type TestServer } from '../support/server.js';

describe('foundation over HTTP', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startProvisioned();
  });
  afterAll(async () => {
    await s.stop();
  });

  it('answers pong as text/plain with credentials', async () => {
    const res = await s.api('/api/v1/ping');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await res.text()).toBe('pong');
  });

  it('refuses missing and wrong credentials with 401, the error body and WWW-Authenticate', async () => {
    for (const auth of [null, ['acme-admin', 'wrong'], ['nobody', 'x']] as const) {
      const res = await s.api('/api/v1/ping', { auth: auth as [string, string] | null });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Basic realm="telephony"');
      expect(await res.json()).toMatchObject({ isError: true, code: 'UNAUTHORIZED' });
    }
  });

  it('GET /login: one service gives the object, svc-id of another customer is 403', async () => {
    expect(await (await s.api('/api/v1/login')).json()).toEqual({ agentId: null, isAdmin: true, serviceId: 101 });
    expect(await (await s.api('/api/v1/login?svc-id=101', { auth: ['asha', 's3cret-asha'] })).json()).toEqual({ agentId: 1001, isAdmin: false, serviceId: 101 });
    const res = await s.api('/api/v1/login?svc-id=202');
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ isError: true, code: 'FORBIDDEN' });
    const bad = await s.api('/api/v1/login?svc-id=abc');
    expect(bad.status).toBe(400);
    expect((await bad.json()).message).toContain('svc-id');
  });

  it('unknown routes are 404 with the error body', async () => {
    const res = await s.api('/api/v1/nothing');
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ isError: true, code: 'NOT_FOUND' });
  });

  it('serves the OpenAPI document at /docs without credentials', async () => {
    const res = await s.api('/docs', { auth: null });
    expect(res.status).toBe(200);
    const doc = await res.json();
    expect(doc.openapi).toMatch(/^3\./);
    expect(Object.keys(doc.paths)).toContain('/api/v1/login');
  });

  it('refuses a body over 1 MiB with 413 and a malformed JSON body with 400', async () => {
    const big = await s.api('/api/v1/user', { method: 'POST', body: JSON.stringify({ email: 'x'.repeat(1024 * 1024 + 10) }), headers: { 'content-type': 'application/json' } });
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    const bad = await s.api('/api/v1/user', { method: 'POST', body: '{nope', headers: { 'content-type': 'application/json' } });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: 'INVALID_PARAMETER' });
  });
});

describe('users', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startProvisioned();
  });
  afterAll(async () => {
    await s.stop();
  });

  it('GET /user answers every field with its type and never the stored hash', async () => {
    const u = await (await s.api('/api/v1/user')).json();
    expect(u).toMatchObject({ id: 1, name: 'Acme Admin', email: 'admin@acme.test', number: '9100000001', active: true, username: 'acme-admin', verified: true, login_id: 'acme-admin' });
    expect(u.password).toMatch(/^[0-9a-f]{64}$/);
  });

  it('POST /user updates e-mail and number from a form, JSON or query; bad values are 400', async () => {
    let res = await s.api('/api/v1/user', { method: 'POST', form: { email: 'boss@acme.test' } });
    expect(res.status).toBe(200);
    expect(await res.json()).toBe(true);
    res = await s.api('/api/v1/user', { method: 'POST', body: JSON.stringify({ number: 919100000002 }), headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(200);
    const u = await (await s.api('/api/v1/user')).json();
    expect(u.email).toBe('boss@acme.test');
    expect(u.number).toBe('919100000002');
    expect((await s.api('/api/v1/user?number=12', { method: 'POST' })).status).toBe(400);
    expect((await s.api('/api/v1/user', { method: 'POST', form: { email: 'not-an-email' } })).status).toBe(400);
  });

  it('POST /user-password needs 8 characters; the old password stops working at once', async () => {
    const short = await s.api('/api/v1/user-password', { method: 'POST', form: { new: 'short' }, auth: ['asha', 's3cret-asha'] });
    expect(short.status).toBe(400);
    expect((await short.json()).message).toContain('new');
    const before = (await (await s.api('/api/v1/user', { auth: ['asha', 's3cret-asha'] })).json()).password;
    const ok = await s.api('/api/v1/user-password', { method: 'POST', form: { new: 'brand-new-pass' }, auth: ['asha', 's3cret-asha'] });
    expect(ok.status).toBe(200);
    expect((await s.api('/api/v1/ping', { auth: ['asha', 's3cret-asha'] })).status).toBe(401);
    const after = await s.api('/api/v1/user', { auth: ['asha', 'brand-new-pass'] });
    expect(after.status).toBe(200);
    expect((await after.json()).password).not.toBe(before);
    // Re-applying the same document keeps the password the user chose.
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: exampleDoc() })).status).toBe(200);
    expect((await s.api('/api/v1/ping', { auth: ['asha', 'brand-new-pass'] })).status).toBe(200);
  });
});

describe('tenant isolation', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startProvisioned();
    const other = {
      services: [{ id: 202, name: 'Globex', customer: 'globex', timezone: 'UTC', dids: ['8000000202'], agents: [] }],
      users: [{ id: 20, username: 'globex-admin', password: 'globex-pass', admin: true, services: [202] }],
    };
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: other })).status).toBe(200);
  });
  afterAll(async () => {
    await s.stop();
  });

  it("a customer's credentials get 403 on another customer's svc-id, both ways", async () => {
    expect((await s.api('/api/v1/login?svc-id=202')).status).toBe(403);
    expect((await s.api('/api/v1/login?svc-id=101', { auth: ['globex-admin', 'globex-pass'] })).status).toBe(403);
    expect(await (await s.api('/api/v1/login', { auth: ['globex-admin', 'globex-pass'] })).json()).toMatchObject({ serviceId: 202 });
  });

  it('refuses a user whose services belong to two customers', async () => {
    const res = await s.ops('/ops/v1/provisioning', {
      method: 'PUT',
      json: { services: [], users: [{ id: 30, username: 'mixed', password: 'mixed-pass', services: [101, 202] }] },
    });
    expect(res.status).toBe(400);
    expect((await res.json()).message).toContain('users[0].services');
  });
});

describe('rate limit', () => {
  it('answers 429 with Retry-After past RATE_LIMIT_RPS per credential', async () => {
    const s = await startServer({ RATE_LIMIT_RPS: '5' });
    try {
      const statuses: number[] = [];
      let retryAfter: string | null = null;
      // Sent at once: each refused password costs a full scrypt verification (an unknown user as
      // much as a wrong password), so one after another they could span more than the 1 s window.
      const answers = await Promise.all(Array.from({ length: 8 }, () => s.api('/api/v1/ping', { auth: ['someone', 'whatever'] })));
      for (const res of answers) {
        statuses.push(res.status);
        if (res.status === 429) {
          retryAfter = res.headers.get('retry-after');
          expect(await res.json()).toMatchObject({ isError: true, code: 'RATE_LIMITED' });
        }
      }
      expect(statuses.filter((x) => x === 401).length).toBeLessThanOrEqual(5);
      expect(statuses).toContain(429);
      expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
      // Another credential has its own budget.
      expect((await s.api('/api/v1/ping', { auth: ['other', 'x'] })).status).toBe(401);
    } finally {
      await s.stop();
    }
  });

  it('with REDIS_URL the counters are in Redis; while Redis does not answer, requests are let through', async () => {
    // Nothing listens there: the counter store fails at once, and the API keeps answering.
    const s = await startServer({ RATE_LIMIT_RPS: '1', REDIS_URL: 'redis://127.0.0.1:9', ROLES: 'api,projector' });
    try {
      const answers = await Promise.all(Array.from({ length: 4 }, () => s.api('/api/v1/ping', { auth: ['someone', 'whatever'] })));
      expect(answers.map((r) => r.status)).toEqual([401, 401, 401, 401]);
    } finally {
      await s.stop();
    }
  });
});
