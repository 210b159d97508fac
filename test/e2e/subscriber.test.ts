/** POST/PATCH/GET /api/v1/subscriber over HTTP (spec "Subscriber record", CONTRACT 7 and 11). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleDoc, startServer, type TestServer } from '../support/server.js';

const ASHA: [string, string] = ['asha', 's3cret-asha'];

/** acme holds services 101 and 202 (admin on both); globex's 303 belongs to another customer. */
function doc() {
  const d = exampleDoc();
  const base = d.services[0];
  d.services.push({ ...structuredClone(base), id: 202, name: 'Acme Sales', dids: ['8000000202'], customers: [], agents: [{ ...base.agents[0], id: 2001, number: '9100002001', sip: 'gina', name: 'Gina' }] });
  d.services.push({ id: 303, name: 'Globex', customer: 'globex', dids: ['8000000303'], agents: [{ id: 3001, name: 'Otto', number: '9100003001' }] });
  d.users[0].services = [101, 202];
  return d;
}

const base = (over: Record<string, string> = {}): Record<string, string> => ({
  'svc-id': '101',
  'auth-key': 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  force: 'false',
  'channel-type': 'http',
  url: 'https://hooks.example.test/events',
  'is-registered': 'true',
  'device-id': 'device-1',
  ...over,
});

const RECORD_KEYS = ['agent_id', 'auth_key', 'channel_type', 'custom_event', 'device_id', 'event_mask', 'force', 'id', 'is_registered', 'register_time', 'registered', 'svc_id', 'updated_time', 'url'];

describe('subscribers over HTTP', () => {
  let s: TestServer;
  const post = (form: Record<string, string>, auth?: [string, string]) => s.api('/api/v1/subscriber', { method: 'POST', form, ...(auth ? { auth } : {}) });
  const patch = (form: Record<string, string>, auth?: [string, string]) => s.api('/api/v1/subscriber', { method: 'PATCH', form, ...(auth ? { auth } : {}) });
  const list = async (query = '', auth?: [string, string]) => {
    const res = await s.api(`/api/v1/subscriber${query}`, auth ? { auth } : {});
    expect(res.status).toBe(200);
    return (await res.json()) as Array<Record<string, unknown>>;
  };
  const expectError = async (res: Response, status: number, code: string, mention?: string) => {
    expect(res.status).toBe(status);
    const body = await res.json();
    expect(body).toMatchObject({ isError: true, code });
    if (mention) expect(body.message).toContain(mention);
  };

  beforeAll(async () => {
    s = await startServer();
    const res = await s.ops('/ops/v1/provisioning', { method: 'PUT', json: doc() });
    expect(res.status).toBe(200);
  });
  afterAll(async () => {
    await s.stop();
  });

  it('POST registers a service-wide subscriber: true, then GET shows exactly the record with its types', async () => {
    const before = Date.now();
    const res = await post(base());
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toBe(true);
    const after = Date.now();
    const [rec, ...rest] = await list('?svc-id=101&agent-id=0');
    expect(rest).toEqual([]);
    expect(Object.keys(rec!).sort()).toEqual(RECORD_KEYS);
    expect(rec).toMatchObject({
      force: false,
      url: 'https://hooks.example.test/events',
      registered: true,
      is_registered: true,
      agent_id: 0,
      svc_id: 101,
      auth_key: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      device_id: 'device-1',
      channel_type: 'http',
      event_mask: 111111,
      custom_event: null,
    });
    expect(Number.isInteger(rec!.id)).toBe(true);
    for (const f of ['register_time', 'updated_time'] as const) {
      expect(Number.isInteger(rec![f])).toBe(true);
      expect(rec![f]).toBeGreaterThanOrEqual(before);
      expect(rec![f]).toBeLessThanOrEqual(after);
    }
  });

  it('a second POST for the same identity is 409 without force (agent-id=0 is service-wide too) and replaces it with force', async () => {
    await expectError(await post(base({ url: 'https://other.example.test/' })), 409, 'CONFLICT', 'force');
    await expectError(await post(base({ 'agent-id': '0' })), 409, 'CONFLICT');
    const [old] = await list('?svc-id=101&agent-id=0');
    const res = await post(base({ force: 'true', url: 'http://other.example.test/in', 'channel-type': 'Webhook', 'event-mask': '000111', 'custom-event': 'crm' }));
    expect(await res.json()).toBe(true);
    const [rec] = await list('?svc-id=101&agent-id=0');
    expect(rec).toMatchObject({ id: old!.id, force: true, url: 'http://other.example.test/in', channel_type: 'webhook', event_mask: 111, custom_event: 'crm' });
    expect(rec!.register_time as number).toBeGreaterThanOrEqual(old!.register_time as number);
  });

  it('POST for an agent, from a JSON body with numbers and booleans, mask as an integer', async () => {
    const res = await s.api('/api/v1/subscriber', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ 'svc-id': 101, 'auth-key': 'k', force: false, 'channel-type': 'http', url: 'https://a.test/x', 'is-registered': false, 'device-id': 'd2', 'event-mask': 10, 'agent-id': 1001 }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toBe(true);
    const [rec] = await list('?svc-id=101&agent-id=1001');
    expect(rec).toMatchObject({ agent_id: 1001, svc_id: 101, event_mask: 10, registered: false, is_registered: false, custom_event: null, force: false });
    // Its id differs from the service-wide subscriber's.
    const [svcWide] = await list('?svc-id=101&agent-id=0');
    expect(rec!.id).not.toBe(svcWide!.id);
  });

  it('POST validation: every required parameter, channel type, url, mask, booleans (400 naming the parameter)', async () => {
    for (const name of ['svc-id', 'auth-key', 'force', 'channel-type', 'url', 'is-registered', 'device-id']) {
      const form = base({ force: 'true' });
      delete form[name];
      await expectError(await post(form), 400, 'INVALID_PARAMETER', name);
    }
    const sms = await post(base({ force: 'true', 'channel-type': 'sms' }));
    expect(sms.status).toBe(400);
    const msg = (await sms.json()).message as string;
    expect(msg).toContain('channel-type');
    expect(msg).toContain('http');
    expect(msg).toContain('webhook');
    for (const url of ['ftp://x.test/', 'not a url', '/relative']) await expectError(await post(base({ force: 'true', url })), 400, 'INVALID_PARAMETER', 'url');
    for (const mask of ['12', '1111111', 'abc', '-1', '1.1']) await expectError(await post(base({ force: 'true', 'event-mask': mask })), 400, 'INVALID_PARAMETER', 'event-mask');
    await expectError(await post(base({ force: 'maybe' })), 400, 'INVALID_PARAMETER', 'force');
    await expectError(await post(base({ force: 'true', 'agent-id': 'x' })), 400, 'INVALID_PARAMETER', 'agent-id');
    // Nothing was changed by the refused requests.
    const [rec] = await list('?svc-id=101&agent-id=0');
    expect(rec).toMatchObject({ url: 'http://other.example.test/in' });
  });

  it('POST for an agent that is not an agent of the service is 404', async () => {
    await expectError(await post(base({ 'agent-id': '9999' })), 404, 'NOT_FOUND', '9999');
    await expectError(await post(base({ 'agent-id': '2001' })), 404, 'NOT_FOUND', '2001'); // agent of 202, not of 101
    expect(await list('?svc-id=101&agent-id=9999')).toEqual([]);
  });

  it("a service not held by the credentials is 403 for POST, PATCH and GET", async () => {
    await expectError(await post(base({ 'svc-id': '303' })), 403, 'FORBIDDEN');
    await expectError(await patch({ 'svc-id': '303', 'agent-id': '0', 'is-registered': 'false' }), 403, 'FORBIDDEN');
    const res = await s.api('/api/v1/subscriber?svc-id=303');
    await expectError(res, 403, 'FORBIDDEN');
    await expectError(await post(base({ 'svc-id': '202' }), ASHA), 403, 'FORBIDDEN');
  });

  it('PATCH toggles registration, changes the mask, or both; answers true and GET shows it right away', async () => {
    const [before] = await list('?svc-id=101&agent-id=0');
    let res = await patch({ 'svc-id': '101', 'agent-id': '0', 'is-registered': 'false' });
    expect(res.status).toBe(200);
    expect(await res.json()).toBe(true);
    let [rec] = await list('?svc-id=101&agent-id=0');
    expect(rec).toMatchObject({ registered: false, is_registered: false, event_mask: 111, id: before!.id, register_time: before!.register_time });
    expect(rec!.updated_time as number).toBeGreaterThanOrEqual(before!.updated_time as number);

    res = await s.api('/api/v1/subscriber?svc-id=101&agent-id=0&event-mask=101', { method: 'PATCH' });
    expect(await res.json()).toBe(true);
    [rec] = await list('?svc-id=101&agent-id=0');
    expect(rec).toMatchObject({ event_mask: 101, is_registered: false });

    res = await s.api('/api/v1/subscriber', { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ 'svc-id': 101, 'agent-id': 0, 'is-registered': true, 'event-mask': 1 }) });
    expect(await res.json()).toBe(true);
    [rec] = await list('?svc-id=101&agent-id=0');
    expect(rec).toMatchObject({ event_mask: 1, is_registered: true, registered: true });

    // Unchanged values are fine too.
    res = await patch({ 'svc-id': '101', 'agent-id': '0', 'is-registered': 'true' });
    expect(await res.json()).toBe(true);
  });

  it('PATCH errors: unknown subscriber 404, missing or bad parameters 400', async () => {
    await expectError(await patch({ 'svc-id': '202', 'agent-id': '0', 'is-registered': 'false' }), 404, 'NOT_FOUND');
    await expectError(await patch({ 'svc-id': '101', 'agent-id': '4242', 'event-mask': '1' }), 404, 'NOT_FOUND');
    await expectError(await patch({ 'svc-id': '101', 'agent-id': '0' }), 400, 'INVALID_PARAMETER', 'is-registered');
    await expectError(await patch({ 'svc-id': '101', 'is-registered': 'false' }), 400, 'INVALID_PARAMETER', 'agent-id');
    await expectError(await patch({ 'agent-id': '0', 'is-registered': 'false' }), 400, 'INVALID_PARAMETER', 'svc-id');
    await expectError(await patch({ 'svc-id': '101', 'agent-id': '0', 'event-mask': '3' }), 400, 'INVALID_PARAMETER', 'event-mask');
    await expectError(await patch({ 'svc-id': '101', 'agent-id': '0', 'is-registered': 'nope' }), 400, 'INVALID_PARAMETER', 'is-registered');
  });

  it("GET without parameters lists every service of the credentials; filters by svc-id and agent-id", async () => {
    expect(await (await post(base({ 'svc-id': '202', 'agent-id': '2001', url: 'https://b.test/' }))).json()).toBe(true);
    const all = await list();
    expect(all.map((r) => [r.svc_id, r.agent_id])).toEqual([
      [101, 0],
      [101, 1001],
      [202, 2001],
    ]);
    expect((await list('?svc-id=202')).map((r) => r.agent_id)).toEqual([2001]);
    expect((await list('?agent-id=2001')).map((r) => r.svc_id)).toEqual([202]);
    expect((await list('?svc-id=101&agent-id=0')).map((r) => r.agent_id)).toEqual([0]);
    expect(new Set(all.map((r) => r.id)).size).toBe(3);
    await expectError(await s.api('/api/v1/subscriber?svc-id=abc'), 400, 'INVALID_PARAMETER', 'svc-id');
  });

  it("agent credentials manage and see only their own agent's subscriber (403 otherwise)", async () => {
    await expectError(await post(base({ force: 'true' }), ASHA), 403, 'FORBIDDEN', 'agent-id=1001');
    await expectError(await post(base({ force: 'true', 'agent-id': '0' }), ASHA), 403, 'FORBIDDEN');
    await expectError(await post(base({ force: 'true', 'agent-id': '1002' }), ASHA), 403, 'FORBIDDEN');
    expect(await (await post(base({ force: 'true', 'agent-id': '1001', url: 'https://asha.test/' }), ASHA)).json()).toBe(true);
    expect(await (await patch({ 'svc-id': '101', 'agent-id': '1001', 'event-mask': '111000' }, ASHA)).json()).toBe(true);
    await expectError(await patch({ 'svc-id': '101', 'agent-id': '0', 'event-mask': '1' }, ASHA), 403, 'FORBIDDEN');
    const mine = await list('', ASHA);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ svc_id: 101, agent_id: 1001, url: 'https://asha.test/', event_mask: 111000, force: true });
    expect(await list('?svc-id=101', ASHA)).toHaveLength(1);
    await expectError(await s.api('/api/v1/subscriber?agent-id=0', { auth: ASHA }), 403, 'FORBIDDEN');
  });

  it('needs credentials', async () => {
    const res = await s.api('/api/v1/subscriber', { auth: null });
    expect(res.status).toBe(401);
  });
});
