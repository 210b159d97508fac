/** Subscriber deliveries end to end: leg events in, the socket event JSON POSTed to each matching subscriber. */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { startProvisioned, type TestServer } from '../support/server.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { until } from '../support/until.js';
import type { LegEventData, LegEventType } from '../../src/domain/call-events.js';

const WHSEC = 'whsec_c3Vic2NyaWJlci1rZXktb25lLTEyMzQ1Njc4';
const PLAIN_KEY = 'plain-auth-key-f';

interface SubSpec {
  path: string;
  agent_id: number;
  event_mask?: number;
  is_registered?: boolean;
  channel_type?: string;
  auth_key?: string;
  svc_id?: number;
}

/** Writes a subscriber document as the subscriber API's projection would (one per svc and agent). */
async function subscribe(s: TestServer, rx: Receiver, spec: SubSpec) {
  const svc = spec.svc_id ?? 101;
  const now = Date.now();
  await s.platform.ctx.reads.put('subscribers', `${svc}-${spec.agent_id}`, {
    id: randomUUID(),
    force: false,
    url: `${rx.url}${spec.path}`,
    registered: true,
    is_registered: spec.is_registered ?? true,
    agent_id: spec.agent_id,
    svc_id: svc,
    auth_key: spec.auth_key ?? WHSEC,
    device_id: `dev-${spec.path}`,
    channel_type: spec.channel_type ?? 'http',
    register_time: now,
    updated_time: now,
    event_mask: spec.event_mask ?? 111111,
    custom_event: null,
  });
}

async function legEvents(s: TestServer, svcId: number, agentId: number, kinds: [LegEventType, boolean][]) {
  const xnid = randomUUID();
  const base: Omit<LegEventData, 'agentId'> = { xnid, svcId, number: '9876543210', time: 0, data: '12', direction: 'Inbound' };
  const events = kinds.map(([type, withAgent], i) => ({ type, data: { ...base, time: Date.now() + i, agentId: withAgent ? agentId : null } }));
  await s.platform.ctx.events.appendToStream(`call-${xnid}`, events);
  return { xnid, ids: (await s.platform.ctx.events.readStream(`call-${xnid}`)).map((e) => e.id) };
}

const ALL: [LegEventType, boolean][] = [
  ['CustomerRing', false],
  ['CustomerUp', false],
  ['AgentRing', true],
  ['AgentUp', true],
  ['CustomerHangup', true],
  ['AgentHangup', true],
];

describe('subscriber deliveries', () => {
  let s: TestServer;
  let rx: Receiver;
  let call: { xnid: string; ids: string[] };
  let call2: { xnid: string; ids: string[] };
  const events = (path: string, c = call) => rx.received.filter((r) => r.path === path && JSON.parse(r.body).xnid === c.xnid);
  const listFor = async (ids: string[], status = '') =>
    ((await (await s.ops(`/ops/v1/deliveries?svc-id=101${status ? `&status=${status}` : ''}`)).json()) as any[]).filter((d) => ids.includes(d.eventId));

  beforeAll(async () => {
    rx = await startReceiver();
    s = await startProvisioned({ WEBHOOK_RETRY_MS: '50,100,200' });
    await subscribe(s, rx, { path: '/all', agent_id: 0 }); // service-wide, every kind
    await subscribe(s, rx, { path: '/agent-1001', agent_id: 1001, event_mask: 111 }); // 000111: agent kinds of agent 1001
    await subscribe(s, rx, { path: '/agent-2002', agent_id: 2002 }); // another agent: nothing of this call
    await subscribe(s, rx, { path: '/paused', agent_id: 3003, is_registered: false });
    await subscribe(s, rx, { path: '/other-channel', agent_id: 4004, channel_type: 'socket' });
    await subscribe(s, rx, { path: '/other-service', agent_id: 0, svc_id: 202 });
    await subscribe(s, rx, { path: '/plain', agent_id: 1001, event_mask: 100000, auth_key: PLAIN_KEY, svc_id: 303 });
    // Channel type `webhook` is an alias of `http`; mask 1 = 000001 (AgentHangup); a key without whsec_.
    await subscribe(s, rx, { path: '/webhook-alias', agent_id: 7007, event_mask: 1, channel_type: 'webhook', auth_key: PLAIN_KEY });
    call = await legEvents(s, 101, 1001, ALL);
    call2 = await legEvents(s, 101, 7007, ALL);
  });
  afterAll(async () => {
    await s.stop();
    await rx.close();
  });

  it('a service-wide subscriber with the full mask gets every leg event as the socket JSON, signed with its key', async () => {
    const got = await until(() => (events('/all').length === 6 ? events('/all') : undefined), 'six events at /all');
    const bodies = got.map((r) => new Webhook(WHSEC).verify(r.body, r.headers) as any);
    expect(bodies.map((b) => b.event).sort()).toEqual(ALL.map(([t]) => t).sort());
    expect(bodies.find((b) => b.event === 'AgentUp')).toEqual({
      xnid: call.xnid, event: 'AgentUp', agent: '1001', number: '9876543210', time: expect.any(Number), data: '12', svc: '101', type: 'Inbound',
    });
    expect(bodies.find((b) => b.event === 'CustomerRing').agent).toBeNull();
    // A unique webhook-id per delivery.
    expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(6);
  });

  it('the mask (an integer, left-padded to six digits) and agent-id select the events', async () => {
    const agent = await until(() => (events('/agent-1001').length === 3 ? events('/agent-1001') : undefined), 'three agent events');
    expect(agent.map((r) => JSON.parse(r.body).event).sort()).toEqual(['AgentHangup', 'AgentRing', 'AgentUp']);
    const alias = await until(() => (events('/webhook-alias', call2).length === 1 ? events('/webhook-alias', call2) : undefined), 'the alias channel');
    // A key without whsec_ is used as its UTF-8 bytes.
    expect((new Webhook(Buffer.from(PLAIN_KEY, 'utf8'), { format: 'raw' }).verify(alias[0]!.body, alias[0]!.headers) as any).event).toBe('AgentHangup');
    // Every delivery of both calls is planned and delivered: 6 + 3 for the first, 6 + 1 for the second.
    await until(async () => (await listFor([...call.ids, ...call2.ids], 'delivered')).length === 16, 'sixteen deliveries delivered');
    for (const p of ['/agent-2002', '/paused', '/other-channel', '/other-service', '/plain']) expect(events(p)).toHaveLength(0);
    expect(events('/webhook-alias')).toHaveLength(0);
    expect(events('/agent-1001', call2)).toHaveLength(0);
  });

  it('lists subscriber deliveries for the operator with the leg event id', async () => {
    const list = await until(async () => {
      const l = await listFor(call2.ids, 'delivered');
      return l.length === 7 ? l : undefined;
    }, 'seven delivered');
    const d = list.find((x) => x.url === `${rx.url}/webhook-alias`);
    expect(Object.keys(d).sort()).toEqual(['attempts', 'eventId', 'id', 'kind', 'status', 'svcId', 'url']);
    expect(d).toMatchObject({ kind: 'subscriber', svcId: 101, status: 'delivered', eventId: call2.ids[5], attempts: [{ statusCode: 200, error: null }] });
    expect(events('/webhook-alias', call2)[0]!.headers['webhook-id']).toBe(d.id);
  });

  it('a subscriber receiver failing twice gets the event on the third attempt', async () => {
    await subscribe(s, rx, { path: '/flaky', agent_id: 6006, event_mask: 1 });
    rx.respond = (r) => (r.path === '/flaky' && rx.received.filter((x) => x.path === '/flaky').length <= 2 ? 500 : 200);
    const c = await legEvents(s, 101, 6006, [['AgentHangup', true]]);
    const hits = await until(() => {
      const h = rx.received.filter((r) => r.path === '/flaky');
      return h.length === 3 ? h : undefined;
    }, 'three attempts at /flaky');
    expect(new Set(hits.map((h) => h.headers['webhook-id'])).size).toBe(1);
    expect(JSON.parse(hits[2]!.body)).toMatchObject({ xnid: c.xnid, event: 'AgentHangup', agent: '6006' });
    const d = await until(async () => {
      const l = (await (await s.ops('/ops/v1/deliveries?svc-id=101')).json()) as any[];
      return l.find((x) => x.url.endsWith('/flaky') && x.status === 'delivered');
    }, '/flaky delivered');
    expect(d.attempts.map((a: any) => a.statusCode)).toEqual([500, 500, 200]);
  });
});
