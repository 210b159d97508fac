/** CONTRACT section 17's callbacks end to end on the simulator: the place kept, agent first, linked both ways, across a restart. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { callEvents, ended, eventually, legTypes, reached } from '../support/wait.js';
import { ROUTING_ADMIN, routingDoc } from '../support/routing.js';
import { replay } from '../../src/projections/replay.js';
import { onEngines } from '../support/engines.js';
import { loadConfig } from '../../src/config.js';

describe('callbacks (CONTRACT 17)', () => {
  let s: TestServer;
  const api = (p: string, init: Parameters<TestServer['api']>[1] = {}) => s.api(p, { auth: ROUTING_ADMIN, ...init });
  const setAgent = async (agentNumber: string, q: string) => expect((await api(`/api/v1/agents?${q}&agent-number=${agentNumber}&svc-id=301`, { method: 'PATCH' })).status).toBe(200);
  const inbound = async (from: string, ivr = '') => (await (await s.ops('/ops/v1/simulator/inbound', { method: 'POST', json: { did: '8000000301', from, ivr } })).json()).xnid as string;
  const callback = (xnid: string, auth = ROUTING_ADMIN) => s.api('/api/v1/queue-callback', { method: 'POST', form: { xnid }, auth });
  const generalQueue = async () => (await (await api('/api/v1/queues?svc-id=301')).json())[0];

  beforeAll(async () => {
    s = await startServer({ SIM_ANSWER_MS: '30', SIM_RING_TIMEOUT_MS: '1500' });
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: routingDoc() })).status).toBe(200);
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('ends the waiting call (missed, callback: true), keeps its place, then calls back agent first with callback-of; survives a restart', async () => {
    const first = await inbound('9876500061');
    await reached(s, first, 'CallQueued');
    const second = await inbound('9876500062');
    await reached(s, second, 'CallQueued');

    // Who may ask, and for which calls.
    expect((await callback(first, ['anu', 's3cret-anu'])).status).toBe(403);
    expect((await callback('00000000-0000-4000-8000-000000000000')).status).toBe(404);
    const res = await callback(first);
    expect(res.status).toBe(200);
    const { callbackId } = await res.json();
    expect(typeof callbackId).toBe('string');
    expect((await callback(first)).status).toBe(409);

    const events = await ended(s, first);
    expect(legTypes(events)).toEqual(['CustomerRing', 'CustomerUp', 'CustomerHangup']);
    const detail = await (await api(`/api/v1/calls/${first}`)).json();
    expect(detail.record).toMatchObject({ callid: first, disposition: 'missed', callback: true });
    expect(detail.summary).toMatchObject({ disposition: 'MISSED', callback: true });
    // The place is kept ahead of the caller who came after.
    expect((await generalQueue()).waiting.map((w: { xnid: string; position: number }) => [w.xnid, w.position])).toEqual([[first, 1], [second, 2]]);

    // A restart keeps the place (it is an event, not a timer), and so does a replay of the log.
    const dataDir = s.dataDir;
    await s.stop({ keepData: true });
    // (the replay of the embedded stores; on the engine doubles, a restart only)
    if (!onEngines) expect((await replay(loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent' }))).events).toBeGreaterThan(0);
    s = await startServer({ SIM_ANSWER_MS: '30', SIM_RING_TIMEOUT_MS: '1500' }, { dataDir });
    // The live caller's call was ended by the restart; the kept place is still there.
    await ended(s, second);
    expect((await generalQueue()).waiting.map((w: { xnid: string; number: string }) => [w.xnid, w.number])).toEqual([[first, '9876500061']]);

    // An agent frees up: it is reserved and rung first, then the caller.
    await setAgent('9300003003', 'status=0');
    const placed = await reached(s, callbackId, 'CallBridged');
    expect(legTypes(placed).slice(0, 4)).toEqual(['AgentRing', 'AgentUp', 'CustomerRing', 'CustomerUp']);
    expect((placed.find((e) => e.type === 'AgentRing')!.data as { agentId: number }).agentId).toBe(3003);
    expect((await generalQueue()).waiting).toEqual([]);
    const live = await (await api(`/api/v1/calls/${callbackId}`)).json();
    expect(live.summary).toMatchObject({ 'callback-of': first, callType: 'OUTBOUND' });
    expect(live.summary.callback).toBeUndefined();
    await s.ops('/ops/v1/simulator/hangup', { method: 'POST', json: { xnid: callbackId, party: 'customer' } });
    await ended(s, callbackId);
    const done = await (await api(`/api/v1/calls/${callbackId}`)).json();
    expect(done.record).toMatchObject({ callid: callbackId, 'customer-number': '9876500061', disposition: 'answered', 'callback-of': first, 'call-type': 'outgoing' });
    await eventually(async () => s.platform.callFlow!.openCalls === 0, 'no open calls');
  });

  it('a callback not answered is not tried again; a call that is not waiting is 409', async () => {
    await setAgent('9300003003', 'status=2');
    // 0000: this number never answers (CONTRACT section 5).
    const caller = await inbound('9876500000');
    await reached(s, caller, 'CallQueued');
    const { callbackId } = await (await callback(caller)).json();
    await ended(s, caller);
    expect((await callback(caller)).status).toBe(409);
    await setAgent('9300003003', 'status=0');
    const events = await ended(s, callbackId, 60_000);
    expect((events.at(-1)!.data as { disposition: string }).disposition).toBe('missed');
    await eventually(async () => s.platform.callFlow!.openCalls === 0, 'no open calls');
    // The agent is free again and nothing places the callback a second time.
    await eventually(async () => (await (await api('/api/v1/agents-free?svc-id=301')).json()).length === 1, 'agent free');
    expect((await generalQueue()).waiting).toEqual([]);
    expect((await callEvents(s, callbackId)).filter((e) => e.type === 'CallStarted').length).toBe(1);
  });
});
