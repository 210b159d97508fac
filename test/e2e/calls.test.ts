import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { ADMIN, ASHA, BALA, GLOBEX, teamDoc } from '../support/fixtures.js';
import { callEvents, ended, eventually, legTypes, reached } from '../support/wait.js';
import { freePort, hasSipp, scenario, startSipp, type Sipp } from '../support/sipp.js';

// The call tests that need no media run on both switches (CONTRACT 16): the simulator, and SIP with
// SIPp as the carrier (trunk-uas.xml: the same busy 0001 / never 0000 numbers) and as the callers.
const SWITCHES = ['sim', ...(hasSipp || process.env.REQUIRE_SIPP ? ['sip'] : [])];

describe.each(SWITCHES)('calls on the %s switch', (kind) => {
  const sip = kind === 'sip';
  // Recordings, add-call, whisper and spy need a media server: the SIP switch refuses them (calls-sip.test.ts).
  const simOnly = sip ? it.skip : it;
  const sipps: Sipp[] = [];
  let sipPort = 0;
  let s: TestServer;
  const patch = (query: string, auth: [string, string] = ADMIN) => s.api(`/api/v1/agents?${query}`, { method: 'PATCH', auth });
  const place = async (form: Record<string, string>, auth: [string, string] = ADMIN) => {
    const res = await s.api('/api/v1/calls', { method: 'POST', form, auth });
    const body = await res.json();
    if (res.status !== 200) throw new Error(`POST /calls ${res.status} ${JSON.stringify(body)}`);
    return body.id as string;
  };
  const inbound = async (from: string, ivr?: string) => {
    if (sip) {
      // A caller through the carrier: an INVITE to the DID; found by its number (each test's callers are its own).
      sipps.push(await startSipp({ scenario: scenario('caller-uac.xml'), remote: `127.0.0.1:${sipPort}`, keys: { did: '8000000101', caller: from, ivr: ivr ?? '' }, args: ['-m', '1'] }));
      return eventually(async () => (await s.platform.ctx.reads.find<{ xnid: string }>('calls')).find((x) => JSON.stringify(x).includes(from))?.xnid, `the call from ${from}`);
    }
    const res = await s.ops('/ops/v1/simulator/inbound', { method: 'POST', json: { did: '8000000101', from, ...(ivr ? { ivr } : {}) } });
    expect(res.status).toBe(200);
    return (await res.json()).xnid as string;
  };
  // On SIP a party's own BYE is calls-sip.test.ts's: here the platform hangs up.
  const simHangup = (xnid: string, party: 'customer' | 'agent') => (sip ? s.api('/api/v1/hangup', { method: 'POST', form: { xnid } }) : s.ops('/ops/v1/simulator/hangup', { method: 'POST', json: { xnid, party } }));
  const setAgents = async (states: Record<string, string>) => {
    for (const [number, q] of Object.entries(states)) {
      const res = await patch(`${q}&agent-number=${number}`);
      expect(res.status).toBe(200);
    }
  };
  const idle = () => s.platform.callFlow!.idle();

  beforeAll(async () => {
    if (sip) {
      const trunk = await startSipp({ scenario: scenario('trunk-uas.xml') });
      sipps.push(trunk);
      sipPort = await freePort();
      s = await startServer({ SWITCH: 'sip', SIP_HOST: '127.0.0.1', SIP_PORT: String(sipPort), SIP_DOMAIN: 'pbx.test', SIP_TRUNK: `127.0.0.1:${trunk.port}`, SIP_RING_TIMEOUT_MS: '300' });
    } else s = await startServer({ SIM_ANSWER_MS: '30', SIM_RING_TIMEOUT_MS: '300' });
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() })).status).toBe(200);
  });
  afterAll(async () => {
    await s?.stop();
    await Promise.all(sipps.map((c) => c.stop()));
  });
  beforeEach(async () => {
    await eventually(async () => s.platform.callFlow!.openCalls === 0, 'no open calls');
    await setAgents({ '9100001001': 'status=0', '9100001002': 'status=2', '9100001003': 'status=2' });
  });

  it('outbound answered: customer first, then the free agent; hangup by API ends it answered (with a recording on the simulator)', async () => {
    const xnid = await place({ number: '9876543210' });
    expect(xnid).toMatch(/^[0-9a-f-]{36}$/);
    await reached(s, xnid, 'CallBridged');
    const busy = await (await s.api('/api/v1/dashboard?svc-id=101')).json();
    expect(busy.agentStats.busyAgents).toBe(1);
    expect(busy.agentsData.find((a: { id: number }) => a.id === 1001).status).toBe('1');
    const out = await patch('status=2', ASHA);
    expect(out.status).toBe(409);
    const res = await s.api(`/api/v1/calls/${xnid}`, { method: 'POST', form: { signal: 'hangup' } });
    expect([res.status, await res.json()]).toEqual([200, true]);
    const events = await ended(s, xnid);
    expect(legTypes(events)).toEqual(['CustomerRing', 'CustomerUp', 'AgentRing', 'AgentUp', expect.stringMatching(/Hangup$/), expect.stringMatching(/Hangup$/)]);
    const end = events.find((e) => e.type === 'CallEnded')!.data as any;
    expect(end.disposition).toBe('answered');
    expect(end.webhook).toMatchObject({ callid: xnid, disposition: 'answered', 'call-type': 'outgoing', 'customer-number': '9876543210', 'agent-number': '9100001001', 'virtual-number': '8000000101' });
    expect(end.webhook['start-time']).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    if (sip) expect(end.webhook['recording-url']).toBeUndefined();
    else {
      const rec = await fetch(end.webhook['recording-url']);
      expect(rec.status).toBe(200);
      expect(rec.headers.get('content-type')).toBe('audio/wav');
      // Change the signature's first character to a different one (replacing it with a fixed letter leaves it unchanged 1 time in 64).
      const tampered = await fetch(end.webhook['recording-url'].replace(/sig=(.)/, (_m: string, c: string) => `sig=${c === 'A' ? 'B' : 'A'}`));
      expect(tampered.status).toBe(403);
    }
    // The agent is free again, and a second hangup is a conflict.
    await eventually(async () => (await (await s.api('/api/v1/agents-free')).json()).length === 1, 'agent free again');
    expect((await s.api('/api/v1/hangup', { method: 'POST', form: { xnid } })).status).toBe(409);
    expect((await s.api('/api/v1/calls/not-a-call', { method: 'POST', form: { signal: 'hangup' } })).status).toBe(404);
    expect((await s.api('/api/v1/calls/00000000-0000-4000-8000-000000000000', { method: 'POST', form: { signal: 'hangup' } })).status).toBe(404);
    expect((await s.api(`/api/v1/calls/${xnid}`, { method: 'POST', form: { signal: 'dance' } })).status).toBe(400);
    // Socket-ready leg events carry the agent once there is one.
    const ev = await callEvents(s, xnid);
    const agentUp = ev.find((e) => e.type === 'AgentUp')!.data as any;
    expect(agentUp).toMatchObject({ xnid, svcId: 101, agentId: 1001, number: '9876543210', data: '', direction: 'Outbound' });
  });

  it('customer no-answer and busy end missed, and the agent was never taken', async () => {
    for (const number of ['9876500001', '9876500000']) {
      const xnid = await place({ number });
      const events = await ended(s, xnid);
      expect(legTypes(events)).toEqual(['CustomerRing', 'CustomerHangup']);
      expect((events.at(-1)!.data as any).disposition).toBe('missed');
      expect((events.at(-1)!.data as any).webhook).toMatchObject({ disposition: 'missed', 'agent-number': '' });
      expect((events.at(-1)!.data as any).webhook['recording-url']).toBeUndefined();
    }
  });

  it('agent credentials dial the agent first; agent-dial-first=false dials the customer first', async () => {
    const xnid = await place({ number: '9876543210' }, ASHA);
    await reached(s, xnid, 'CallBridged');
    expect(legTypes(await callEvents(s, xnid)).slice(0, 4)).toEqual(['AgentRing', 'AgentUp', 'CustomerRing', 'CustomerUp']);
    expect((await simHangup(xnid, 'customer')).status).toBe(200);
    const events = await ended(s, xnid);
    expect((events.at(-1)!.data as any).disposition).toBe('answered');
    await idle();
    const second = await place({ number: '9876543210', 'agent-dial-first': 'false' }, ASHA);
    await reached(s, second, 'CallBridged');
    expect(legTypes(await callEvents(s, second)).slice(0, 2)).toEqual(['CustomerRing', 'CustomerUp']);
    await simHangup(second, 'agent');
    await ended(s, second);
  });

  it('a named agent is rung (admin names it by sip); a busy named agent is 409; a recording=false call has no recording', async () => {
    await setAgents({ '9100001002': 'status=0' });
    const xnid = await place({ number: '9876543210', 'agent-sip': 'bala', recording: 'false' });
    await reached(s, xnid, 'CallBridged');
    const bridged = (await callEvents(s, xnid)).find((e) => e.type === 'CallBridged')!.data as any;
    expect(bridged.agentId).toBe(1002);
    const again = await s.api('/api/v1/calls', { method: 'POST', form: { number: '9876543211', 'agent-sip': 'bala' } });
    expect(again.status).toBe(409);
    expect((await s.api('/api/v1/calls', { method: 'POST', form: { number: '9876543211', 'agent-sip': 'asha' }, auth: BALA })).status).toBe(403);
    await s.api('/api/v1/hangup', { method: 'POST', form: { xnid } });
    const end = (await ended(s, xnid)).at(-1)!.data as any;
    expect(end.recordingUrl).toBeNull();
    expect(end.webhook['recording-url']).toBeUndefined();
  });

  it('inbound: IVR digits ride on every event, the longest-free agent answers', async () => {
    await setAgents({ '9100001002': 'status=0' });
    await idle();
    const before = (await (await s.api('/api/v1/dashboard?svc-id=101')).json()).callStats;
    const xnid = await inbound('9811111111', '12');
    await reached(s, xnid, 'CallBridged');
    const stats = (await (await s.api('/api/v1/dashboard?svc-id=101')).json()).callStats;
    expect(stats).toEqual({ totalCalls: before.totalCalls + 1, ibCalls: before.ibCalls + 1, obCalls: before.obCalls, inIvr: 0 });
    const events = await callEvents(s, xnid);
    const bridged = events.find((e) => e.type === 'CallBridged')!.data as any;
    expect(bridged.agentId).toBe(1001); // logged in (free) before Bala
    for (const e of events.filter((e) => /^(Customer|Agent)/.test(e.type))) expect((e.data as any).data).toBe('12');
    await simHangup(xnid, 'customer');
    const end = (await ended(s, xnid)).at(-1)!.data as any;
    expect(end.webhook).toMatchObject({ 'call-type': 'incoming', disposition: 'answered', 'virtual-number': '8000000101' });
  });

  it('inbound while every agent is on a break waits in the queue, then is served when one returns', async () => {
    await setAgents({ '9100001001': 'break=1' });
    const xnid = await inbound('9822222222');
    await reached(s, xnid, 'CallQueued');
    const d = await (await s.api('/api/v1/dashboard?svc-id=101')).json();
    expect(d.customersInQueue).toEqual({ data: { '1': [{ number: '9822222222', xnid, since: expect.any(Number) }] }, dataCount: '1' });
    await setAgents({ '9100001001': 'break=0' });
    await reached(s, xnid, 'CallBridged');
    const after = await (await s.api('/api/v1/dashboard?svc-id=101')).json();
    expect(after.customersInQueue.dataCount).toBe('0');
    await simHangup(xnid, 'agent');
    expect((await ended(s, xnid)).at(-1)!.type).toBe('CallEnded');
  });

  it('a blocked caller is rejected, counted as spam, reaches no agent and owes no webhook', async () => {
    const before = await (await s.ops('/ops/v1/metering?svc-id=101')).json();
    const xnid = await inbound('9000000666');
    const events = await ended(s, xnid);
    expect(legTypes(events)).toEqual(['CustomerRing', 'CustomerHangup']);
    expect((events.at(-1)!.data as any).webhook).toBeNull();
    const after = await (await s.ops('/ops/v1/metering?svc-id=101')).json();
    expect(after).toEqual({ ...before, spam: before.spam + 1 });
  });

  it('an agent who does not answer is skipped and the next free agent tried', async () => {
    // Bala's number ends in 0001: busy.
    expect((await patch('number=9100010001&agent-number=9100001002')).status).toBe(200);
    await setAgents({ '9100001001': 'status=2', '9100010001': 'status=0' });
    await setAgents({ '9100001001': 'status=0' });
    const xnid = await inbound('9833333333');
    await reached(s, xnid, 'CallBridged');
    const events = await callEvents(s, xnid);
    expect(legTypes(events)).toEqual(['CustomerRing', 'CustomerUp', 'AgentRing', 'AgentHangup', 'AgentRing', 'AgentUp']);
    expect((events.find((e) => e.type === 'CallBridged')!.data as any).agentId).toBe(1001);
    await s.api('/api/v1/hangup', { method: 'POST', form: { xnid } });
    await ended(s, xnid);
    expect((await patch('number=9100001002&agent-number=9100010001')).status).toBe(200);
  });

  it('a call for a named agent who does not answer ends missed instead of waiting for another agent', async () => {
    expect((await patch('number=9100010001&agent-number=9100001002')).status).toBe(200); // busy number
    await setAgents({ '9100010001': 'status=0' });
    const xnid = await place({ number: '9876543210', 'agent-sip': 'bala', 'agent-dial-first': 'false' });
    const events = await ended(s, xnid);
    expect(legTypes(events)).toEqual(['CustomerRing', 'CustomerUp', 'AgentRing', 'AgentHangup', 'CustomerHangup']);
    expect((events.at(-1)!.data as any).disposition).toBe('missed');
    expect((await patch('number=9100001002&agent-number=9100010001')).status).toBe(200);
  });

  it('blind and attended transfer ring the target on the same call', async () => {
    for (const type of ['BLIND', 'ATTENDED']) {
      await idle();
      await setAgents({ '9100001002': 'status=0' });
      await setAgents({ '9100001001': 'status=2' });
      await setAgents({ '9100001001': 'status=0' });
      const xnid = await place({ number: '9876543210' });
      await reached(s, xnid, 'CallBridged');
      const from = ((await callEvents(s, xnid)).find((e) => e.type === 'CallBridged')!.data as any).agentId;
      const to = from === 1001 ? 1002 : 1001;
      const res = await s.api('/api/v1/transfer', { method: 'POST', form: { 'agent-id': String(from), type, 'call-id': xnid, 'to-agent-id': String(to) } });
      expect([res.status, await res.json()]).toEqual([200, true]);
      const events = await reached(s, xnid, 'CallBridged', 2);
      const bridges = events.filter((e) => e.type === 'CallBridged').map((e) => (e.data as any).agentId);
      expect(bridges).toEqual([from, to]);
      await eventually(async () => {
        const ev = await callEvents(s, xnid);
        return ev.some((e) => e.type === 'AgentHangup' && (e.data as any).agentId === from);
      }, 'the first agent leaves');
      const agentRing = events.filter((e) => e.type === 'AgentRing').map((e) => (e.data as any).xnid);
      expect(agentRing).toEqual([xnid, xnid]);
      await s.api('/api/v1/hangup', { method: 'POST', form: { xnid } });
      expect((await ended(s, xnid)).at(-1)!.data).toMatchObject({ disposition: 'answered' });
    }
  });

  it('transfer refuses a busy target (409), an unknown call and another tenant\'s call (both 404)', async () => {
    await setAgents({ '9100001002': 'status=0' });
    const xnid = await place({ number: '9876543210', 'agent-sip': 'asha' });
    await reached(s, xnid, 'CallBridged');
    const other = await place({ number: '9876543212', 'agent-sip': 'bala' });
    await reached(s, other, 'CallBridged');
    const tr = (form: Record<string, string>, auth: [string, string] = ADMIN) => s.api('/api/v1/transfer', { method: 'POST', form, auth });
    expect((await tr({ 'agent-id': '1001', type: 'BLIND', 'call-id': xnid, 'to-agent-id': '1002' })).status).toBe(409);
    expect((await tr({ 'agent-id': '1001', type: 'BLIND', 'call-id': '00000000-0000-4000-8000-000000000000', 'to-agent-id': '1003' })).status).toBe(404);
    expect((await tr({ 'agent-id': '1001', type: 'BLIND', 'call-id': xnid, 'to-agent-id': '1003' }, GLOBEX)).status).toBe(404);
    expect((await tr({ 'agent-id': '1001', type: 'SIDEWAYS', 'call-id': xnid, 'to-agent-id': '1003' })).status).toBe(400);
    expect((await tr({ 'agent-id': '1001', type: 'BLIND', 'call-id': xnid, 'to-agent-id': '1003' }, BALA)).status).toBe(403);
    for (const id of [xnid, other]) await s.api('/api/v1/hangup', { method: 'POST', form: { xnid: id } });
    await ended(s, xnid);
    await ended(s, other);
  });

  simOnly('add-call brings a second agent in; whisper and spy dial a monitor; both answer the action result', async () => {
    await setAgents({ '9100001002': 'status=0' });
    const xnid = await place({ number: '9876543210', 'agent-sip': 'asha' });
    await reached(s, xnid, 'CallBridged');
    const add = await s.api('/api/v1/add-call', { method: 'POST', form: { xnid, toagentid: '1002', 'agent-id': '1001' } });
    expect([add.status, await add.json()]).toEqual([200, { isError: false, callTxnId: xnid }]);
    await reached(s, xnid, 'CallBridged', 2);
    for (const type of ['whisper', 'spy']) {
      const ws = await s.api('/api/v1/whisper-spy', { method: 'POST', form: { xnid, 'country-code': '91', type, number: '9100000002' } });
      expect([ws.status, await ws.json()]).toEqual([200, { isError: false, callTxnId: xnid }]);
    }
    await reached(s, xnid, 'CallMonitorJoined', 2);
    await simHangup(xnid, 'customer');
    const events = await ended(s, xnid);
    expect(events.filter((e) => e.type === 'AgentHangup')).toHaveLength(2);
    expect(events.filter((e) => e.type === 'CallMonitorLeft')).toHaveLength(2);
  });

  it('two calls racing for the last free agent: one gets the agent, the other waits, never both', async () => {
    await idle();
    const [a, b] = await Promise.all([inbound('9844444441'), inbound('9844444442')]);
    const first = await eventually(async () => {
      for (const x of [a, b]) if ((await callEvents(s, x)).some((e) => e.type === 'CallBridged')) return x;
      return null;
    }, 'one call bridged');
    const second = first === a ? b : a;
    await reached(s, second, 'CallQueued');
    expect((await callEvents(s, second)).some((e) => e.type === 'CallBridged')).toBe(false);
    await simHangup(first, 'customer');
    await ended(s, first);
    await reached(s, second, 'CallBridged');
    await simHangup(second, 'customer');
    await ended(s, second);
  });

  it('history and CRM: agent and customer recent calls, customer details basic and detailed', async () => {
    const xnid = await place({ number: '9876543210' });
    await reached(s, xnid, 'CallBridged');
    await s.api('/api/v1/hangup', { method: 'POST', form: { xnid } });
    await ended(s, xnid);
    await idle();
    const agent = (await (await s.api('/api/v1/agents')).json()).find((x: { id: number }) => x.id === 1001);
    expect(agent.call_txn_id.split(',')[0]).toBe(xnid);
    const items = await (await s.api(`/api/v1/agent-recent-calls?svc-id=101&recent_txn_id=${agent.call_txn_id}`)).json();
    expect(items[0]).toEqual({
      duration: expect.stringMatching(/^\d+$/),
      receivedBy: 'Asha',
      note: '',
      disposition: 'ANSWERED',
      xnid,
      recording: sip ? null : expect.stringContaining('/recordings/'),
      time: expect.stringMatching(/^\d{4}-\d\d-\d\d\d\d:\d\d:\d\d$/),
      callType: 'OUTBOUND',
      ivrData: '',
    });
    const basic = await (await s.api('/api/v1/customer-details?svc-id=101&customer-number=9876543210')).json();
    expect(basic).toEqual({ number: '9876543210', note: 'VIP', address: 'Pune', name: 'Ravi' });
    const detailed = await (await s.api('/api/v1/customer-details?svc-id=101&customer-number=9876543210&detailed=true')).json();
    expect(detailed.crc[0].xnid).toBe(xnid);
    expect(detailed.crm).toEqual({
      id: expect.any(Number),
      svc_id: 101,
      recent_txn_id: expect.stringMatching(new RegExp(`^${xnid}`)),
      dnd: false,
      name: 'Ravi',
      country_code: expect.any(String),
      number: '9876543210',
      address: 'Pune',
      email: null,
      block: null,
      block_reason: null,
      blocked_by: null,
      blocked_date: null,
      update_time: expect.any(Number),
    });
    const cust = await (await s.api(`/api/v1/customer-recent-calls?svc-id=101&recent_txn_id=${detailed.crm.recent_txn_id}`)).json();
    expect(cust[0].xnid).toBe(xnid);
    // A caller never seen before becomes a customer on first contact.
    const fresh = await inbound('9855555555');
    await reached(s, fresh, 'CallBridged');
    await simHangup(fresh, 'customer');
    await ended(s, fresh);
    expect((await s.api('/api/v1/customer-details?svc-id=101&customer-number=9855555555')).status).toBe(200);
    expect((await s.api('/api/v1/customer-details?svc-id=101&customer-number=9855555556')).status).toBe(404);
    expect((await s.api('/api/v1/customer-details?svc-id=202&customer-number=9855555555')).status).toBe(403);
    expect((await s.api('/api/v1/agent-recent-calls?svc-id=101&recent_txn_id=nope')).status).toBe(400);
  });
});
