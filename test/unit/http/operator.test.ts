/** The operator API takes only the operator's bearer token (CONTRACT section 3). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATOR_TOKEN, exampleDoc, startProvisioned, type TestServer } from '../../support/server.js';

describe('operator API authentication', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startProvisioned();
  });
  afterAll(async () => {
    await s.stop();
  });
  const basic = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;

  const refusals: Array<[string, string | null]> = [
    ['no credentials', null],
    ['a wrong bearer token', `Bearer ${OPERATOR_TOKEN}-wrong`],
    ['an empty bearer token', 'Bearer '],
    ['the token without the Bearer scheme', OPERATOR_TOKEN],
    ["a customer admin's Basic credentials", basic('acme-admin', 's3cret-admin')],
    ["an agent's Basic credentials", basic('asha', 's3cret-asha')],
    ['the operator token as a Basic password', basic('operator', OPERATOR_TOKEN)],
  ];
  for (const [what, authorization] of refusals) {
    it(`refuses ${what} with 401 and changes nothing`, async () => {
      const before = await s.platform.ctx.events.headPosition();
      const doc = exampleDoc();
      doc.users[0].name = 'Changed By Someone';
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (authorization !== null) headers.authorization = authorization;
      const res = await s.ops('/ops/v1/provisioning', { method: 'PUT', body: JSON.stringify(doc), headers: authorization === null ? { ...headers, authorization: '' } : headers });
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ isError: true, code: 'UNAUTHORIZED' });
      expect(await s.platform.ctx.events.headPosition()).toBe(before);
    });
  }

  it('accepts the operator token', async () => {
    const res = await s.ops('/ops/v1/provisioning', { method: 'PUT', json: exampleDoc() });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ services: 1, agents: 1, users: 2 });
  });

  it('the operator token is no customer credential on /api', async () => {
    const res = await s.api('/api/v1/ping', { auth: null, headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } });
    expect(res.status).toBe(401);
  });

  it('a refused document is 400 naming the field, and appends nothing', async () => {
    const before = await s.platform.ctx.events.headPosition();
    const doc = exampleDoc();
    doc.services[0].agents[0].number = '12';
    const res = await s.ops('/ops/v1/provisioning', { method: 'PUT', json: doc });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ isError: true, code: 'INVALID_PARAMETER', message: expect.stringContaining('services[0].agents[0].number') });
    expect(await s.platform.ctx.events.headPosition()).toBe(before);
  });
});
