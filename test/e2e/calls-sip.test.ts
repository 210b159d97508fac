/** Calls over SIP (CONTRACT 16) end to end: the platform with SWITCH=sip, SIPp as the carrier and the callers. */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { teamDoc } from '../support/fixtures.js';
import { ended, eventually, legTypes, reached } from '../support/wait.js';
import { freePort, hasSipp, messageLog, outcome, scenario, scenarioWith, sippMessages, startSipp, type Logged, type Sipp } from '../support/sipp.js';
import { header } from '../../src/gateways/switch/sip/message.js';
import { audioOf } from '../../src/gateways/switch/sip/sdp.js';

describe.skipIf(!hasSipp && !process.env.REQUIRE_SIPP)('calls over SIP, SIPp as carrier and callers', () => {
  let s: TestServer;
  let trunk: Sipp;
  let trunkLog: string;
  let sipPort: number;
  const sipps: Sipp[] = [];
  const place = async (form: Record<string, string>) => {
    const res = await s.api('/api/v1/calls', { method: 'POST', form });
    const body = await res.json();
    if (res.status !== 200) throw new Error(`POST /calls ${res.status} ${JSON.stringify(body)}`);
    return body.id as string;
  };
  const setAgents = async (states: Record<string, string>) => {
    for (const [number, q] of Object.entries(states)) expect((await s.api(`/api/v1/agents?${q}&agent-number=${number}`, { method: 'PATCH' })).status).toBe(200);
  };
  const caller = async (file: string, keys: Record<string, string>, transport: 'udp' | 'tcp' = 'udp') => {
    const c = await startSipp({ scenario: file, remote: `127.0.0.1:${sipPort}`, keys, args: ['-m', '1'], transport });
    sipps.push(c);
    return c;
  };

  beforeAll(async () => {
    trunkLog = messageLog();
    trunk = await startSipp({ scenario: scenario('trunk-uas.xml'), messageFile: trunkLog });
    sipPort = await freePort();
    s = await startServer({ SWITCH: 'sip', SIP_HOST: '127.0.0.1', SIP_PORT: String(sipPort), SIP_DOMAIN: 'pbx.test', SIP_TRUNK: `127.0.0.1:${trunk.port}`, SIP_RING_TIMEOUT_MS: '1500' });
    const doc = teamDoc();
    const agents = doc.services[0].agents;
    agents[0].sipPassword = 'asha-phone-secret';
    agents[1].sipPassword = 'bala-phone-secret';
    agents[2].sipPassword = 'chitra-phone-secret';
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: doc })).status).toBe(200);
  });
  afterAll(async () => {
    await s?.stop();
    await Promise.all(sipps.map((c) => c.stop()));
    await trunk?.stop();
  });
  beforeEach(async () => {
    await eventually(async () => s.platform.callFlow!.openCalls === 0, 'no open calls');
    await setAgents({ '9100001001': 'status=0', '9100001002': 'status=2', '9100001003': 'status=2' });
  });

  it('outbound, customer first: INVITE at the trunk, answered, bridged; hangup sends BYE; answered without a recording', async () => {
    const xnid = await place({ number: '9876543210' });
    await reached(s, xnid, 'CallBridged');
    const res = await s.api(`/api/v1/calls/${xnid}`, { method: 'POST', form: { signal: 'hangup' } });
    expect(res.status).toBe(200);
    const events = await ended(s, xnid);
    expect(legTypes(events)).toEqual(['CustomerRing', 'CustomerUp', 'AgentRing', 'AgentUp', expect.stringMatching(/Hangup$/), expect.stringMatching(/Hangup$/)]);
    const end = events.find((e) => e.type === 'CallEnded')!.data as any;
    expect(end.disposition).toBe('answered');
    expect(end.webhook).toMatchObject({ callid: xnid, disposition: 'answered', 'customer-number': '9876543210', 'agent-number': '9100001001' });
    expect(end.webhook['recording-url']).toBeUndefined();
  });

  it('outbound, agent first: the agent is rung first, then the customer', async () => {
    const xnid = await place({ number: '9876543210', 'agent-dial-first': 'true' });
    await reached(s, xnid, 'CallBridged');
    expect((await s.api(`/api/v1/calls/${xnid}`, { method: 'POST', form: { signal: 'hangup' } })).status).toBe(200);
    const events = await ended(s, xnid);
    expect(legTypes(events).slice(0, 4)).toEqual(['AgentRing', 'AgentUp', 'CustomerRing', 'CustomerUp']);
  });

  it('a busy customer (486) ends missed; one that never answers is cancelled after SIP_RING_TIMEOUT_MS; one refused without any 1xx still rings first', async () => {
    const busy = await place({ number: '9876540001' });
    const never = await place({ number: '9876540000' });
    const refused = await place({ number: '9876540002' });
    for (const xnid of [busy, never, refused]) {
      const events = await ended(s, xnid, 15_000);
      expect(legTypes(events)).toEqual(['CustomerRing', 'CustomerHangup']);
      expect((events.find((e) => e.type === 'CallEnded')!.data as any).disposition).toBe('missed');
    }
  });

  it('inbound with X-IVR-Data: the caller is answered, queued, bridged to the free agent; the platform hangs up with BYE', async () => {
    const c = await caller(scenario('caller-uac.xml'), { did: '8000000101', caller: '9876512345', ivr: '42#' });
    const xnid = await eventually(async () => {
      const calls = await s.platform.ctx.reads.find<{ xnid: string; customerNumber?: string }>('calls');
      return calls.find((x) => JSON.stringify(x).includes('9876512345'))?.xnid;
    }, 'the inbound call');
    const events = await reached(s, xnid, 'CallBridged');
    expect(events.find((e) => e.type === 'CallStarted')!.data).toMatchObject({ direction: 'Inbound', customerNumber: '9876512345', data: '42#', did: '8000000101' });
    expect((await s.api(`/api/v1/calls/${xnid}`, { method: 'POST', form: { signal: 'hangup' } })).status).toBe(200);
    await ended(s, xnid);
    expect(await outcome(c)).toEqual({ code: 0, output: '' });
  });

  it('inbound over TCP: the caller is answered and bridged, and ended by the platform', async () => {
    const c = await caller(scenario('caller-uac.xml'), { did: '8000000101', caller: '9876500033', ivr: '' }, 'tcp');
    const xnid = await eventually(async () => {
      const calls = await s.platform.ctx.reads.find<{ xnid: string }>('calls');
      return calls.find((x) => JSON.stringify(x).includes('9876500033'))?.xnid;
    }, 'the inbound call');
    await reached(s, xnid, 'CallBridged');
    expect((await s.api(`/api/v1/calls/${xnid}`, { method: 'POST', form: { signal: 'hangup' } })).status).toBe(200);
    await ended(s, xnid);
    expect(await outcome(c)).toEqual({ code: 0, output: '' });
  });

  it('an unknown DID is 404 and a blocked caller 603, counted as spam; nothing is dialled', async () => {
    // A number that is no DID (an attempt to use the platform as a relay to the carrier).
    const unknown = await caller(scenarioWith('caller-refused.xml', { STATUS: '404' }), { did: '15550009999', caller: '9876512345' });
    expect(await outcome(unknown)).toEqual({ code: 0, output: '' });
    expect(sippMessages(trunkLog).some((m) => m.message.kind === 'request' && m.message.uri.includes('15550009999'))).toBe(false);
    const before = (await (await s.ops('/ops/v1/metering?svc-id=101')).json()).spam;
    const blocked = await caller(scenarioWith('caller-refused.xml', { STATUS: '603' }), { did: '8000000101', caller: '9000000666' });
    expect(await outcome(blocked)).toEqual({ code: 0, output: '' });
    await eventually(async () => (await (await s.ops('/ops/v1/metering?svc-id=101')).json()).spam === before + 1, 'spam counted');
  });

  it('features that need a media server are 409 with a message saying the SIP switch does not mix media', async () => {
    const xnid = await place({ number: '9876543210' });
    await reached(s, xnid, 'CallBridged');
    const tries = [
      s.api('/api/v1/whisper-spy', { method: 'POST', form: { xnid, 'country-code': '91', type: 'whisper', number: '9100000001' } }),
      s.api('/api/v1/whisper-spy', { method: 'POST', form: { xnid, 'country-code': '91', type: 'barge', number: '9100000001' } }),
      s.api('/api/v1/add-call', { method: 'POST', form: { xnid, toagentid: '1002', 'agent-id': '1001' } }),
      s.ops('/ops/v1/simulator/inbound', { method: 'POST', json: { did: '8000000101', from: '9876543210' } }),
      s.ops('/ops/v1/simulator/hangup', { method: 'POST', json: { xnid, party: 'customer' } }),
    ];
    for (const res of await Promise.all(tries)) {
      expect(res.status).toBe(409);
      expect((await res.json()).message ?? '').toMatch(/SIP switch does not mix media/);
    }
    expect((await s.api(`/api/v1/calls/${xnid}`, { method: 'POST', form: { signal: 'hangup' } })).status).toBe(200);
    await ended(s, xnid);
  });

  it('REGISTER: a wrong password is 403 and registers nothing; the right one binds the phone, and the agent is rung there', async () => {
    const log = messageLog();
    const phone = await startSipp({ scenario: scenario('trunk-uas.xml'), messageFile: log });
    sipps.push(phone);
    const contact = `sip:asha@127.0.0.1:${phone.port}`;
    const wrong = await startSipp({ scenario: scenarioWith('phone-register.xml', { STATUS: '403' }), remote: `127.0.0.1:${sipPort}`, keys: { user: 'asha', domain: 'pbx.test', contact }, args: ['-m', '1', '-au', 'asha', '-ap', 'not-the-password'] });
    sipps.push(wrong);
    expect(await outcome(wrong)).toEqual({ code: 0, output: '' });
    expect(await s.platform.ctx.reads.get('sip-bindings', 'asha')).toBeNull();
    const right = await startSipp({ scenario: scenarioWith('phone-register.xml', { STATUS: '200' }), remote: `127.0.0.1:${sipPort}`, keys: { user: 'asha', domain: 'pbx.test', contact }, args: ['-m', '1', '-au', 'asha', '-ap', 'asha-phone-secret'] });
    sipps.push(right);
    expect(await outcome(right)).toEqual({ code: 0, output: '' });
    expect(await s.platform.ctx.reads.get('sip-bindings', 'asha')).toMatchObject({ contact, flow: null });
    const xnid = await place({ number: '9876543210' });
    await reached(s, xnid, 'CallBridged');
    // The agent's leg went to the phone, not to the trunk.
    const invites = sippMessages(log).filter((m) => m.direction === 'received' && m.message.kind === 'request' && m.message.method === 'INVITE');
    expect(invites[0]?.message.kind === 'request' && invites[0].message.uri).toBe(contact);
    expect((await s.api(`/api/v1/calls/${xnid}`, { method: 'POST', form: { signal: 'hangup' } })).status).toBe(200);
    await ended(s, xnid);
    // The password is in no read: the agents' records do not carry it.
    const agentsRead = await (await s.api('/api/v1/agents?svc-id=101')).text();
    expect(agentsRead).not.toContain('asha-phone-secret');
    await s.platform.ctx.reads.commit([{ collection: 'sip-bindings', id: 'asha', doc: null }], {});
  });

  it('a REGISTER guessing run is cut off: after 10 wrong passwords the username is refused 403 at once, without a challenge', async () => {
    const contact = 'sip:bala@127.0.0.1:5999';
    for (let i = 0; i < 10; i++) {
      const guess = await startSipp({ scenario: scenarioWith('phone-register.xml', { STATUS: '403' }), remote: `127.0.0.1:${sipPort}`, keys: { user: 'bala', domain: 'pbx.test', contact }, args: ['-m', '1', '-au', 'bala', '-ap', `guess-${i}-xxxx`] });
      sipps.push(guess);
      expect(await outcome(guess)).toEqual({ code: 0, output: '' });
    }
    // Refused before any check: no challenge to answer, whatever the password.
    const late = await startSipp({ scenario: scenario('register-refused.xml'), remote: `127.0.0.1:${sipPort}`, keys: { user: 'bala', domain: 'pbx.test', contact }, args: ['-m', '1'] });
    sipps.push(late);
    expect(await outcome(late)).toEqual({ code: 0, output: '' });
    expect(await s.platform.ctx.reads.get('sip-bindings', 'bala')).toBeNull();
  });

  it("a caller's own BYE ends the call; the re-INVITE of the bridge carried the agent's media to it; the agent's leg gets BYE", async () => {
    const c = await caller(scenario('caller-bye-uac.xml'), { did: '8000000101', caller: '9876500077' });
    expect(await outcome(c)).toEqual({ code: 0, output: '' });
    const xnid = await eventually(async () => {
      const calls = await s.platform.ctx.reads.find<{ xnid: string }>('calls');
      return calls.find((x) => JSON.stringify(x).includes('9876500077'))?.xnid;
    }, 'the inbound call');
    const events = await ended(s, xnid);
    expect(legTypes(events)).toEqual(['CustomerRing', 'CustomerUp', 'AgentRing', 'AgentUp', 'CustomerHangup', 'AgentHangup']);
    expect((events.at(-1)!.data as any).disposition).toBe('answered');
  });

  it('a blind transfer rings the new agent through the trunk and bridges it; the first agent leaves', async () => {
    await setAgents({ '9100001002': 'status=0' });
    const xnid = await place({ number: '9876543210' });
    await reached(s, xnid, 'CallBridged');
    const from = ((await s.platform.ctx.events.readStream(`call-${xnid}`)).find((e) => e.type === 'CallBridged')!.data as any).agentId;
    const to = from === 1001 ? 1002 : 1001;
    const res = await s.api('/api/v1/transfer', { method: 'POST', form: { 'agent-id': String(from), type: 'BLIND', 'call-id': xnid, 'to-agent-id': String(to) } });
    expect([res.status, await res.json()]).toEqual([200, true]);
    const events = await reached(s, xnid, 'CallBridged', 2);
    expect(events.filter((e) => e.type === 'CallBridged').map((e) => (e.data as any).agentId)).toEqual([from, to]);
    await eventually(async () => (await s.platform.ctx.events.readStream(`call-${xnid}`)).some((e) => e.type === 'AgentHangup' && (e.data as any).agentId === from), 'the first agent leaves');
    expect((await s.api(`/api/v1/calls/${xnid}`, { method: 'POST', form: { signal: 'hangup' } })).status).toBe(200);
    expect((await ended(s, xnid)).at(-1)!.data).toMatchObject({ disposition: 'answered' });
  });

  it("an attended transfer: the first agent stays with the customer while the new agent's phone rings; once it answers the first agent gets BYE and the customer and the new agent get each other's media", async () => {
    // Chitra's phone, registered: it rings 1 s before answering (SIP_RING_TIMEOUT_MS is 1.5 s here), its media on 198.51.100.x (the trunk's are on 192.0.2.x).
    const phoneLog = messageLog();
    const phone = await startSipp({ scenario: scenarioWith('trunk-uas.xml', { '<label id="answer"/>': '<pause milliseconds="1000"/>\n  <label id="answer"/>', '192.0.2.': '198.51.100.' }), messageFile: phoneLog });
    sipps.push(phone);
    const contact = `sip:chitra@127.0.0.1:${phone.port}`;
    const reg = await startSipp({ scenario: scenarioWith('phone-register.xml', { STATUS: '200' }), remote: `127.0.0.1:${sipPort}`, keys: { user: 'chitra', domain: 'pbx.test', contact }, args: ['-m', '1', '-au', 'chitra', '-ap', 'chitra-phone-secret'] });
    sipps.push(reg);
    expect(await outcome(reg)).toEqual({ code: 0, output: '' });
    const xnid = await place({ number: '9876543210' });
    await reached(s, xnid, 'CallBridged');
    await setAgents({ '9100001003': 'status=0' });
    const trunkAt = sippMessages(trunkLog).length;
    const got = (log: Logged[], method: string) => log.filter((m) => m.direction === 'received' && m.message.kind === 'request' && m.message.method === method);
    const res = await s.api('/api/v1/transfer', { method: 'POST', form: { 'agent-id': '1001', type: 'ATTENDED', 'call-id': xnid, 'to-agent-id': '1003' } });
    expect([res.status, await res.json()]).toEqual([200, true]);
    // While the phone rings, Asha is still with the customer: no BYE has left for either of their legs.
    await eventually(async () => sippMessages(phoneLog).some((m) => m.direction === 'sent' && m.message.kind === 'response' && m.message.status === 180), 'the phone ringing');
    expect(got(sippMessages(trunkLog).slice(trunkAt), 'BYE')).toEqual([]);
    expect((await s.platform.ctx.events.readStream(`call-${xnid}`)).some((e) => e.type === 'AgentHangup')).toBe(false);
    // The phone answers: Chitra is bridged, Asha leaves.
    const events = await reached(s, xnid, 'CallBridged', 2);
    expect(events.filter((e) => e.type === 'CallBridged').map((e) => (e.data as any).agentId)).toEqual([1001, 1003]);
    const trunk = () => sippMessages(trunkLog).slice(trunkAt);
    await eventually(async () => got(trunk(), 'BYE').length === 1, "BYE on Asha's leg");
    const types = await eventually(async () => {
      const t = (await s.platform.ctx.events.readStream(`call-${xnid}`)).map((e) => e.type + ((e.data as any).agentId ? `:${(e.data as any).agentId}` : ''));
      return t.includes('AgentHangup:1001') ? t : undefined;
    }, "Asha's leg ended");
    expect(types.indexOf('AgentUp:1003')).toBeLessThan(types.indexOf('AgentHangup:1001'));
    // On the wire: the customer's last SDP from the platform is the phone's answer, and the phone's is the customer's media.
    const phoneAnswer = audioOf(sippMessages(phoneLog).find((m) => m.direction === 'sent' && m.message.kind === 'response' && m.message.status === 200 && /INVITE/.test(header(m.message, 'cseq') ?? ''))!.message.body)!;
    expect(phoneAnswer.address).toMatch(/^198\.51\.100\./);
    await eventually(async () => {
      const toCustomer = got(trunk(), 'INVITE').at(-1);
      const toPhone = got(sippMessages(phoneLog), 'INVITE').at(-1);
      return toCustomer && toPhone && audioOf(toCustomer.message.body)?.address === phoneAnswer.address && /^192\.0\.2\./.test(audioOf(toPhone.message.body)?.address ?? '') ? true : undefined;
    }, 'each party given the other media by re-INVITE');
    expect((await s.api(`/api/v1/calls/${xnid}`, { method: 'POST', form: { signal: 'hangup' } })).status).toBe(200);
    expect((await ended(s, xnid)).at(-1)!.data).toMatchObject({ disposition: 'answered' });
    await s.platform.ctx.reads.commit([{ collection: 'sip-bindings', id: 'chitra', doc: null }], {});
  });
});
