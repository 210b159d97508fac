/** CONTRACT section 17 end to end on the simulator: queues by IVR digits, caller order, skill levels, overflow. */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { callEvents, ended, eventually, reached } from '../support/wait.js';
import { ROUTING_ADMIN, VIP, routingDoc } from '../support/routing.js';
import { onEngines } from '../support/engines.js';

describe('routing: queues, priorities, skills, overflow (CONTRACT 17)', () => {
  let s: TestServer;
  const api = (p: string, init: Parameters<TestServer['api']>[1] = {}) => s.api(p, { auth: ROUTING_ADMIN, ...init });
  const setAgent = async (agentNumber: string, q: string) => expect((await api(`/api/v1/agents?${q}&agent-number=${agentNumber}&svc-id=301`, { method: 'PATCH' })).status).toBe(200);
  const inbound = async (from: string, ivr = '') => {
    const res = await s.ops('/ops/v1/simulator/inbound', { method: 'POST', json: { did: '8000000301', from, ivr } });
    expect(res.status).toBe(200);
    return (await res.json()).xnid as string;
  };
  const hangupCustomer = async (xnid: string) => expect((await s.ops('/ops/v1/simulator/hangup', { method: 'POST', json: { xnid, party: 'customer' } })).status).toBe(200);
  const queued = async (xnid: string) => reached(s, xnid, 'CallQueued');
  const ringOf = async (xnid: string) => (await reached(s, xnid, 'AgentRing')).find((e) => e.type === 'AgentRing')!.data as { agentId: number; time: number };

  beforeAll(async () => {
    s = await startServer({ SIM_ANSWER_MS: '30', SIM_RING_TIMEOUT_MS: '2000' });
    const res = await s.ops('/ops/v1/provisioning', { method: 'PUT', json: routingDoc() });
    expect(res.status).toBe(200);
  });
  afterAll(async () => {
    await s?.stop();
  });
  beforeEach(async () => {
    await eventually(async () => s.platform.callFlow!.openCalls === 0, 'no open calls');
    for (const n of ['9300003001', '9300003002', '9300003003']) await setAgent(n, 'status=2');
  });

  it('provisioning checks the routing fields: a queue skill the service lacks, a bad priority are 400 naming the field', async () => {
    const bad = routingDoc() as any;
    bad.services[0]!.queues[1] = { ...bad.services[0]!.queues[1]!, skillId: 9 };
    const res = await s.ops('/ops/v1/provisioning', { method: 'PUT', json: bad });
    expect(res.status).toBe(400);
    expect((await res.json()).message).toContain('queues[1].skillId');
    const worse = routingDoc() as any;
    worse.services[0].customers[0].priority = 'high';
    const res2 = await s.ops('/ops/v1/provisioning', { method: 'PUT', json: worse });
    expect(res2.status).toBe(400);
    expect((await res2.json()).message).toContain('customers[0].priority');
    // Applying the document again changes nothing.
    expect(await (await s.ops('/ops/v1/provisioning', { method: 'PUT', json: routingDoc() })).json()).toMatchObject({ services: 1, agents: 3 });
  });

  it('IVR digits pick the queue (longest digits win, else the first queue); the dashboard and GET /calls/{xnid} show it', async () => {
    const english = await inbound('9876500001', '12');
    const general = await inbound('9876500002', '5');
    await queued(english);
    await queued(general);
    const dash = await (await api('/api/v1/dashboard?svc-id=301')).json();
    expect(dash.customersInQueue.data['2'].map((c: { xnid: string }) => c.xnid)).toEqual([english]);
    expect(dash.customersInQueue.data['1'].map((c: { xnid: string }) => c.xnid)).toEqual([general]);
    expect(dash.customersInQueue.dataCount).toBe('2');
    expect((await (await api(`/api/v1/calls/${english}`)).json()).queueId).toBe(2);
    expect((await (await api(`/api/v1/calls/${general}`)).json()).queueId).toBe(1);
    await hangupCustomer(english);
    await hangupCustomer(general);
    await ended(s, english);
    await ended(s, general);
    // An outbound call that never waited joined no queue.
    await setAgent('9300003003', 'status=0');
    const out = await api('/api/v1/calls', { method: 'POST', form: { number: '9876500009', 'svc-id': '301' } });
    const outId = (await out.json()).id as string;
    await reached(s, outId, 'CallBridged');
    await hangupCustomer(outId);
    await ended(s, outId);
    expect((await (await api(`/api/v1/calls/${outId}`)).json()).queueId).toBeNull();
  });

  it('callers are served by queue priority, then customer priority, then time waited', async () => {
    const plain = await inbound('9876500011');
    await queued(plain);
    const vip = await inbound(VIP);
    await queued(vip);
    const urgent = await inbound('9876500013', '9');
    await queued(urgent);
    await setAgent('9300003003', 'status=0');
    const order: string[] = [];
    for (let i = 0; i < 3; i++) {
      const next = await eventually(async () => {
        for (const x of [plain, vip, urgent]) if (!order.includes(x) && (await callEvents(s, x)).some((e) => e.type === 'CallBridged')) return x;
        return null;
      }, 'the next caller bridged');
      order.push(next);
      await hangupCustomer(next);
      await ended(s, next);
    }
    expect(order).toEqual([urgent, vip, plain]);
  });

  it('a skilled queue rings the highest level first; a queue without a skill the agent free longest', async () => {
    await setAgent('9300003003', 'status=0');
    await setAgent('9300003001', 'status=0');
    await setAgent('9300003002', 'status=0');
    const english = await inbound('9876500021', '1');
    expect((await ringOf(english)).agentId).toBe(3002);
    const general = await inbound('9876500022');
    expect((await ringOf(general)).agentId).toBe(3003);
    for (const x of [english, general]) {
      await reached(s, x, 'CallBridged');
      await hangupCustomer(x);
      await ended(s, x);
    }
  });

  it('GET /api/v1/queues: callers in the order served, their waits and priorities; agents free; admin credentials only', async () => {
    const plain = await inbound('9876500041');
    await queued(plain);
    const vip = await inbound(VIP, '7');
    await queued(vip);
    const english = await inbound('9876500043', '1');
    await queued(english);
    const res = await api('/api/v1/queues?svc-id=301');
    expect(res.status).toBe(200);
    const queues = await res.json();
    expect(queues.map((q: { queueId: number; name: string }) => [q.queueId, q.name])).toEqual([[1, 'General'], [2, 'English'], [3, 'Priority']]);
    const [general, eng, prio] = queues;
    expect(general.waiting.map((w: any) => [w.xnid, w.number, w.position, w.priority])).toEqual([[vip, VIP, 1, 5], [plain, '9876500041', 2, 0]]);
    for (const w of general.waiting) expect(Number.isInteger(w.waitSeconds) && w.waitSeconds >= 0).toBe(true);
    expect(general.longestWaitSeconds).toBe(Math.max(...general.waiting.map((w: any) => w.waitSeconds)));
    expect(eng.waiting.map((w: any) => w.xnid)).toEqual([english]);
    expect(prio).toMatchObject({ waiting: [], longestWaitSeconds: 0, agentsFree: 0, expectedWaitSeconds: null });
    // Nobody staffed: no basis for an estimate.
    expect(general.expectedWaitSeconds).toBeNull();
    // Agent credentials, and a service of another customer, are 403.
    expect((await s.api('/api/v1/queues?svc-id=301', { auth: ['anu', 's3cret-anu'] })).status).toBe(403);
    expect((await api('/api/v1/queues?svc-id=101')).status).toBe(403);
    // Without svc-id: the credentials' first service.
    expect((await (await api('/api/v1/queues')).json()).length).toBe(3);
    for (const x of [plain, vip, english]) await hangupCustomer(x);
    for (const x of [plain, vip, english]) await ended(s, x);
    // A free unskilled agent counts for the general queue, not for the skilled one (before its overflow).
    await setAgent('9300003003', 'status=0');
    const [g2, e2] = await (await api('/api/v1/queues?svc-id=301')).json();
    expect([g2.agentsFree, g2.expectedWaitSeconds, e2.agentsFree, e2.expectedWaitSeconds]).toEqual([1, 0, 0, null]);
  });

  it('barge: the number\'s leg joins the answered call like a whisper or spy leg, as a barge; a bad type is 400', async () => {
    await setAgent('9300003003', 'status=0');
    const call = await inbound('9876500081');
    await reached(s, call, 'CallBridged');
    const res = await api('/api/v1/whisper-spy', { method: 'POST', form: { xnid: call, 'country-code': '91', type: 'barge', number: '9100000077' } });
    expect([res.status, await res.json()]).toEqual([200, { isError: false, callTxnId: call }]);
    const joined = (await reached(s, call, 'CallMonitorJoined')).find((e) => e.type === 'CallMonitorJoined')!.data as { mode: string };
    expect(joined.mode).toBe('barge');
    const bad = await api('/api/v1/whisper-spy', { method: 'POST', form: { xnid: call, 'country-code': '91', type: 'shout', number: '9100000077' } });
    expect(bad.status).toBe(400);
    expect((await bad.json()).message).toContain('barge');
    await hangupCustomer(call);
    const events = await ended(s, call);
    expect(events.filter((e) => e.type === 'CallMonitorLeft')).toHaveLength(1);
  });

  it('overflow: an unskilled free agent takes a skilled queue\'s caller once it waited overflowS, within a second', async () => {
    await setAgent('9300003003', 'status=0');
    const english = await inbound('9876500031', '1');
    const events = await queued(english);
    const waitFrom = events.find((e) => e.type === 'CallQueued')!.data as { time: number };
    const ring = await ringOf(english);
    expect(ring.agentId).toBe(3003);
    const waited = ring.time - waitFrom.time;
    expect(waited).toBeGreaterThanOrEqual(2000);
    expect(waited).toBeLessThan(2000 + 1500);
    await reached(s, english, 'CallBridged');
    await hangupCustomer(english);
    await ended(s, english);
  });
});

describe('expected wait under a known load (CONTRACT 17)', () => {
  let s: TestServer;
  afterAll(async () => {
    await s?.stop();
  });

  // On the engine doubles each hand-over between calls waits on their slower read models: a delay the
  // estimate does not model, so the accuracy is measured on the embedded stores.
  it.skipIf(onEngines)('one agent, calls that last a second: the estimate for a caller joining behind two is close to its real wait', async () => {
    s = await startServer({ SIM_ANSWER_MS: '30', SIM_TALK_MS: '1000' });
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: routingDoc() })).status).toBe(200);
    const api = (p: string, init: Parameters<TestServer['api']>[1] = {}) => s.api(p, { auth: ROUTING_ADMIN, ...init });
    expect((await api('/api/v1/agents?status=0&agent-number=9300003003&svc-id=301', { method: 'PATCH' })).status).toBe(200);
    const inbound = async (from: string) => (await (await s.ops('/ops/v1/simulator/inbound', { method: 'POST', json: { did: '8000000301', from } })).json()).xnid as string;
    // Two calls teach the platform how long a call keeps the agent.
    for (const from of ['9876500051', '9876500052']) await ended(s, await inbound(from));
    await eventually(async () => s.platform.callFlow!.openCalls === 0, 'no open calls');
    const first = await inbound('9876500053');
    await reached(s, first, 'CallBridged');
    const waiting = [await inbound('9876500054'), await inbound('9876500055')];
    for (const x of waiting) await reached(s, x, 'CallQueued');
    const [general] = await (await api('/api/v1/queues?svc-id=301')).json();
    expect(general.waiting.length).toBe(2);
    const estimate = general.expectedWaitSeconds as number;
    const joined = await inbound('9876500056');
    const events = await reached(s, joined, 'AgentRing', 1, 20_000);
    const up = events.find((e) => e.type === 'CustomerUp')!.data as { time: number };
    const ring = events.find((e) => e.type === 'AgentRing')!.data as { time: number };
    const actual = (ring.time - up.time) / 1000;
    process.stdout.write(`expected wait: estimated ${estimate} s, waited ${actual.toFixed(2)} s\n`);
    // The estimate is whole seconds; a loaded machine adds hand-over delays: 1.5 s of slack.
    expect(Math.abs(estimate - actual)).toBeLessThanOrEqual(1.5);
    for (const x of [first, ...waiting, joined]) await ended(s, x, 20_000);
  });
});
