/** GET /api/v1/events: server-sent events of a service, resumable, scoped to the credentials (CONTRACT section 13). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { ADMIN, ASHA, BALA, GLOBEX, teamDoc } from '../support/fixtures.js';
import { ended, eventually } from '../support/wait.js';
import { basic, openSse, type SseClient } from '../support/sse.js';
import { isLegEvent, toSocketEvent } from '../../src/domain/call-events.js';

describe('live events over HTTP (SSE)', () => {
  let s: TestServer;
  const open: SseClient[] = [];
  const sse = async (query: string, auth: [string, string] = ADMIN, headers: Record<string, string> = {}) => {
    const c = await openSse(`${s.url}/api/v1/events${query}`, { authorization: basic(auth), ...headers });
    open.push(c);
    return c;
  };
  const patch = async (query: string, auth: [string, string] = ADMIN) => {
    const res = await s.api(`/api/v1/agents?${query}`, { method: 'PATCH', auth });
    expect(res.status).toBe(200);
    return res.json();
  };
  const placeAndEnd = async () => {
    const res = await s.api('/api/v1/calls', { method: 'POST', form: { number: '9876543210' } });
    expect(res.status).toBe(200);
    const { id } = await res.json();
    await eventually(async () => (await s.platform.ctx.events.readStream(`call-${id}`)).some((e) => e.type === 'AgentUp') || null, 'the agent to answer');
    expect((await s.api(`/api/v1/calls/${id}`, { method: 'POST', form: { signal: 'hangup' } })).status).toBe(200);
    return { xnid: id as string, events: await ended(s, id) };
  };

  beforeAll(async () => {
    s = await startServer({ SIM_ANSWER_MS: '20', SSE_HEARTBEAT_MS: '150' });
    const doc = teamDoc();
    // A second service of the same customer, to show cursors are bound to their service.
    doc.services.push({ ...structuredClone(doc.services[0]), id: 103, name: 'Acme Sales', dids: ['8000000103'], agents: [], customers: [], socketKey: 'k-103' });
    doc.users[0].services = [101, 103];
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: doc })).status).toBe(200);
    await eventually(async () => s.platform.callFlow!.openCalls === 0 || null, 'no open calls');
  });
  afterAll(async () => {
    for (const c of open) c.close();
    await s.stop();
  });

  it('answers text/event-stream headers at once, before any event, with a request id', async () => {
    const c = await sse('?svc-id=101', ADMIN, { 'x-request-id': 'sse-test-1' });
    expect(c.status).toBe(200);
    expect(c.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(c.headers.get('x-request-id')).toBe('sse-test-1');
    expect(c.messages).toEqual([]);
    c.close();
  });

  it('sends agent records and call events as the socket sends them, each with a cursor', async () => {
    await patch('status=2&agent-number=9100001001');
    const c = await sse('?svc-id=101');
    await patch('status=0', ASHA);
    const [agentMsg] = await c.waitFor(1, 'agent');
    const record = JSON.parse(agentMsg!.data);
    expect(record).toMatchObject({ id: 1001, name: 'Asha', number: '9100001001', status: 0, svc_id: 101, sip: 'asha' });
    const listed = (await (await s.api('/api/v1/agents?svc-id=101')).json()) as { id: number }[];
    expect(record).toEqual(listed.find((a) => a.id === 1001));

    const { xnid, events } = await placeAndEnd();
    const expected = events.filter(isLegEvent).map((e) => toSocketEvent(e));
    const calls = await c.waitFor(expected.length, 'call');
    expect(calls.map((m) => JSON.parse(m.data))).toEqual(expected);
    expect(expected.every((e) => e.xnid === xnid)).toBe(true);
    // The agent's reservation, answer and release are agent messages too, in log order.
    const states = (await c.waitFor(4, 'agent')).map((m) => JSON.parse(m.data).call_txn_id);
    expect(states.at(-1)).toContain(xnid);
    const ids = c.messages.map((m) => m.id);
    expect(ids.every((id) => typeof id === 'string' && id.length > 0)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('resumes after Last-Event-ID or ?after= with nothing lost and nothing repeated', async () => {
    const reference = await sse('?svc-id=101');
    const first = await sse('?svc-id=101');
    await patch('break=2', ASHA);
    await patch('break=0', ASHA);
    await first.waitFor(2);
    first.close();
    const cut = first.messages[1]!.id!;
    // Happens while no one is connected with that cursor.
    await placeAndEnd();
    await patch('break=3', ASHA);
    const total = (await reference.waitFor(2 + 6 + 3 + 1)).length;
    const resumed = await sse('?svc-id=101', ADMIN, { 'last-event-id': cut });
    const viaQuery = await sse(`?svc-id=101&after=${encodeURIComponent(cut)}`);
    await resumed.waitFor(total - 2);
    await viaQuery.waitFor(total - 2);
    const key = (m: { event: string; id: string | null; data: string }) => `${m.event}|${m.id}|${m.data}`;
    expect([...first.messages.slice(0, 2), ...resumed.messages].map(key)).toEqual(reference.messages.map(key));
    expect(viaQuery.messages.map(key)).toEqual(resumed.messages.map(key));
    // Last-Event-ID wins over the URL's ?after= (a browser reconnects with the URL it was opened with).
    const both = await sse(`?svc-id=101&after=${encodeURIComponent(first.messages[0]!.id!)}`, ADMIN, { 'last-event-id': reference.messages.at(-1)!.id! });
    await patch('break=0', ASHA);
    const [next] = await both.waitFor(1);
    expect(next!.event).toBe('agent');
    expect(JSON.parse(next!.data)).toMatchObject({ id: 1001, status: 0 });
  });

  it('refuses a cursor of another service, a made-up one, and one from the future', async () => {
    const c = await sse('?svc-id=101');
    await patch('break=4', ASHA);
    const [m] = await c.waitFor(1);
    // The position of a real message, in the unsigned form cursors had: anyone could have made it.
    const real = s.platform.ctx.cursors.decode(101, m!.id!)!;
    expect(real).toBeGreaterThan(0);
    for (const [query, headers] of [
      [`?svc-id=101&after=${Buffer.from(`101.${real}`).toString('base64url')}`, {}],
      ['?svc-id=101', { 'last-event-id': Buffer.from(`101.${real - 1}`).toString('base64url') }],
      ['?svc-id=103', { 'last-event-id': m!.id! }],
      [`?svc-id=103&after=${m!.id}`, {}],
      ['?svc-id=101&after=not-a-cursor', {}],
      [`?svc-id=101&after=${Buffer.from('101.99999999').toString('base64url')}`, {}],
    ] as const) {
      const res = await fetch(`${s.url}/api/v1/events${query}`, { headers: { authorization: basic(ADMIN), ...headers } });
      expect(res.status, query).toBe(400);
      expect(await res.json()).toMatchObject({ isError: true, code: 'INVALID_PARAMETER' });
    }
    await patch('break=0', ASHA);
  });

  it("gives agent credentials their own agent's events and the events of its calls only", async () => {
    const asha = await sse('', ASHA);
    const admin = await sse('?svc-id=101');
    await patch('status=0', BALA);
    await patch('status=2', BALA);
    await patch('status=2', ASHA);
    await patch('status=0', ASHA);
    await admin.waitFor(4, 'agent');
    await asha.waitFor(2, 'agent');
    const { xnid } = await placeAndEnd();
    await eventually(async () => admin.messages.filter((m) => m.event === 'call' && JSON.parse(m.data).xnid === xnid).length === 6 || null, 'the admin to see the call');
    await eventually(async () => asha.messages.filter((m) => m.event === 'call').length >= 4 || null, 'asha to see her call');
    expect(asha.messages.filter((m) => m.event === 'agent').every((m) => JSON.parse(m.data).id === 1001)).toBe(true);
    expect(admin.messages.some((m) => m.event === 'agent' && JSON.parse(m.data).id === 1002)).toBe(true);
    expect(asha.messages.filter((m) => m.event === 'call').every((m) => JSON.parse(m.data).agent === '1001')).toBe(true);
  });

  it('gives an agent the events of a call it is on that name another agent (a transfer), also after resuming', async () => {
    await patch('status=0', ASHA);
    await patch('status=2', BALA);
    const asha = await sse('', ASHA);
    const res = await s.api('/api/v1/calls', { method: 'POST', form: { number: '9876543210' } });
    const { id: xnid } = await res.json();
    await eventually(async () => (await s.platform.ctx.events.readStream(`call-${xnid}`)).some((e) => e.type === 'AgentUp') || null, 'asha to answer');
    // Her ring and answer; the customer's legs came before she was on the call.
    expect((await asha.waitFor(2, 'call')).map((m) => JSON.parse(m.data).event)).toEqual(['AgentRing', 'AgentUp']);
    const cut = asha.messages.at(-1)!.id!;
    asha.close();
    await patch('status=0', BALA);
    const t = await s.api('/api/v1/transfer', { method: 'POST', form: { 'agent-id': '1001', type: 'BLIND', 'call-id': xnid, 'to-agent-id': '1002' } });
    expect(t.status).toBe(200);
    await eventually(async () => (await s.platform.ctx.events.readStream(`call-${xnid}`)).filter((e) => e.type === 'AgentUp').length === 2 || null, 'bala to answer');
    const resumed = await sse('', ASHA, { 'last-event-id': cut });
    await eventually(async () => resumed.messages.some((m) => m.event === 'call' && JSON.parse(m.data).agent === '1002' && JSON.parse(m.data).event === 'AgentUp') || null, "bala's answer on asha's call");
    // Bala's own changes (login) are not asha's to see; another call of bala's would not be either.
    expect(resumed.messages.filter((m) => m.event === 'agent').every((m) => JSON.parse(m.data).id === 1001)).toBe(true);
    expect(resumed.messages.filter((m) => m.event === 'call').every((m) => JSON.parse(m.data).xnid === xnid)).toBe(true);
    await s.api('/api/v1/hangup', { method: 'POST', form: { xnid } });
    await ended(s, xnid);
    await patch('status=2', BALA);
  });

  it('sends a comment line at the heartbeat interval', async () => {
    const c = await sse('?svc-id=101');
    await eventually(async () => c.comments.length >= 2 || null, 'two heartbeats', 3000);
    expect(c.messages).toEqual([]);
  });

  it('needs credentials and a service of the credentials', async () => {
    const none = await fetch(`${s.url}/api/v1/events?svc-id=101`);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Basic/);
    const other = await fetch(`${s.url}/api/v1/events?svc-id=202`, { headers: { authorization: basic(ADMIN) } });
    expect(other.status).toBe(403);
    const globex = await sse('?svc-id=101', GLOBEX);
    expect(globex.status).toBe(403);
    const bad = await fetch(`${s.url}/api/v1/events?svc-id=abc`, { headers: { authorization: basic(ADMIN) } });
    expect(bad.status).toBe(400);
  });

  it('closes open streams when the server stops', async () => {
    const t = await startServer();
    try {
      expect((await t.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() })).status).toBe(200);
      const c = await openSse(`${t.url}/api/v1/events?svc-id=101`, { authorization: basic(ADMIN) });
      expect(c.status).toBe(200);
      const started = Date.now();
      await t.stop();
      expect(Date.now() - started).toBeLessThan(5000);
    } catch (err) {
      await t.stop().catch(() => {});
      throw err;
    }
  });
});
