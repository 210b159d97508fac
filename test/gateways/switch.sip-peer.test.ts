/**
 * The SIP switch as SIPp sees it: what reaches the carrier on the wire after a bridge, a CANCEL,
 * with SIPp losing packets (UDP retransmissions), and over TCP.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SipSwitch } from '../../src/gateways/switch/sip/sip-switch.js';
import type { SwitchSignal } from '../../src/gateways/switch/port.js';
import { header, type SipMessage } from '../../src/gateways/switch/sip/message.js';
import { audioOf } from '../../src/gateways/switch/sip/sdp.js';
import { hasSipp, messageLog, outcome, scenario, sippMessages, startSipp, type Sipp } from '../support/sipp.js';
import { until } from '../support/until.js';

const quietLog = { debug: () => undefined, info: () => undefined, warn: () => undefined };

describe.skipIf(!hasSipp && !process.env.REQUIRE_SIPP)('SIP switch on the wire (SIPp as the carrier)', () => {
  const open: Array<SipSwitch | Sipp> = [];
  afterEach(async () => {
    await Promise.allSettled(open.splice(0).map((x) => ('exited' in x ? x.stop() : x.close())));
  });

  // RFC 3261's T1 (500 ms): a SIPp scenario cannot take a request retransmitted at a step that does not expect it.
  async function setup(transport: 'udp' | 'tcp', args: string[] = [], t1 = 500, file = 'trunk-uas.xml') {
    const log = messageLog();
    const trunk = await startSipp({ scenario: scenario(file), transport, messageFile: log, args });
    open.push(trunk);
    const sw = await SipSwitch.start({ host: '127.0.0.1', port: 0, domain: 'pbx.test', trunk: { transport, host: '127.0.0.1', port: trunk.port }, ringTimeoutMs: 20_000, log: quietLog, timers: { t1, t2: 8 * t1, t4: 10 * t1 } });
    open.push(sw);
    const signals: SwitchSignal[] = [];
    sw.onSignal((s) => signals.push(s));
    const kinds = (legId: string) => signals.filter((s) => s.legId === legId).map((s) => s.kind);
    const messages = () => sippMessages(log);
    return { trunk, sw, kinds, messages };
  }

  /** A bridged pair of legs through the trunk; their SIP Call-IDs. */
  async function bridged(sw: SipSwitch, kinds: (l: string) => string[], n: number, timeoutMs = 10_000) {
    const c = { callId: `c${n}`, legId: `c${n}:cust` };
    const a = { callId: `c${n}`, legId: `c${n}:agent` };
    sw.dial({ ...c, number: `98765${String(n).padStart(5, '0')}9`, role: 'customer', from: '8000000101' });
    sw.dial({ ...a, number: `91000${String(n).padStart(5, '0')}9`, role: 'agent', from: '8000000101' });
    await until(() => kinds(c.legId).includes('answered') && kinds(a.legId).includes('answered'), `call ${n} answered`, timeoutMs);
    const ids = { customer: sw.legs.get(c.legId)!.dialog.sipCallId, agent: sw.legs.get(a.legId)!.dialog.sipCallId };
    sw.bridge(c.callId, c.legId, a.legId, { record: false });
    return { c, a, ids };
  }

  const of = (msgs: { direction: string; message: SipMessage }[], callId: string) => msgs.filter((m) => header(m.message, 'call-id') === callId);
  const reinvitesTo = (msgs: { direction: string; message: SipMessage }[], callId: string) =>
    of(msgs, callId).filter((m) => m.direction === 'received' && m.message.kind === 'request' && m.message.method === 'INVITE' && /tag=/.test(header(m.message, 'to') ?? ''));
  const answerOf = (msgs: { direction: string; message: SipMessage }[], callId: string) =>
    of(msgs, callId).filter((m) => m.direction === 'sent' && m.message.kind === 'response' && m.message.status === 200 && m.message.body.includes('m=audio'));

  it("after the bridge each party's last SDP from the platform carries the other's address, audio port and formats; From is the DID", async () => {
    const { sw, kinds, messages } = await setup('udp');
    const { c, a, ids } = await bridged(sw, kinds, 1);
    // Both re-INVITEs answered: the second goes out once the first is answered.
    await until(() => reinvitesTo(messages(), ids.agent).length === 1 && of(messages(), ids.agent).some((m) => m.direction === 'received' && m.message.kind === 'request' && m.message.method === 'ACK' && m.message.body === ''), 'both re-INVITEs done');
    const log = messages();
    const customerGot = audioOf(reinvitesTo(log, ids.customer).at(-1)!.message.body)!;
    const agentGot = audioOf(reinvitesTo(log, ids.agent).at(-1)!.message.body)!;
    const agentMedia = audioOf(answerOf(log, ids.agent)[0]!.message.body)!;
    const customerAnswer = audioOf(answerOf(log, ids.customer).at(-1)!.message.body)!;
    expect(customerGot).toEqual(agentMedia);
    expect(agentGot).toEqual(customerAnswer);
    expect(customerGot.address).not.toBe(agentGot.address);
    // Before the bridge each party was answered on hold.
    const firstAck = of(log, ids.customer).find((m) => m.direction === 'received' && m.message.kind === 'request' && m.message.method === 'ACK')!;
    expect(firstAck.message.body).toMatch(/a=inactive/);
    const invite = of(log, ids.customer).find((m) => m.direction === 'received' && m.message.kind === 'request' && m.message.method === 'INVITE')!;
    expect(header(invite.message, 'from')).toMatch(/^<sip:8000000101@pbx\.test>;tag=/);
    sw.hangup(c.legId);
    sw.hangup(a.legId);
    await until(() => kinds(c.legId).includes('ended') && kinds(a.legId).includes('ended'), 'ended');
    await until(() => [ids.customer, ids.agent].every((id) => of(messages(), id).some((m) => m.direction === 'sent' && m.message.kind === 'response' && /BYE/.test(header(m.message, 'cseq') ?? ''))), 'BYEs answered');
  });

  it('hanging up a ringing leg sends CANCEL; the carrier answers 487, which is ACKed', async () => {
    const { sw, kinds, messages, trunk } = await setup('udp');
    sw.dial({ callId: 'r', legId: 'r:1', number: '9876540000', role: 'customer' });
    await until(() => kinds('r:1').includes('ringing'), 'ringing');
    const id = sw.legs.get('r:1')!.dialog.sipCallId;
    sw.hangup('r:1');
    await until(() => kinds('r:1').includes('ended'), 'ended');
    await until(() => of(messages(), id).some((m) => m.direction === 'received' && m.message.kind === 'request' && m.message.method === 'ACK'), 'the 487 ACKed').catch((err) => {
      throw new Error(`${err.message}: ${of(messages(), id).map((m) => `${m.direction} ${m.message.kind === 'request' ? m.message.method : m.message.status}`).join(', ')}\n${trunk.output().split('\n').filter((l) => /abort|unexpected|error/i.test(l)).join('\n')}`);
    });
    const methods = of(messages(), id).filter((m) => m.direction === 'received').map((m) => (m.message.kind === 'request' ? m.message.method : ''));
    expect(methods).toEqual(['INVITE', 'CANCEL', 'ACK']);
  });

  it('with SIPp losing 10% of packets (-lost 10), UDP retransmissions carry every leg through answer and BYE', async () => {
    const { sw, kinds, messages } = await setup('udp', ['-lost', '10'], 500, 'trunk-lossy-uas.xml');
    const legs = Array.from({ length: 16 }, (_, n) => ({ callId: `l${n}`, legId: `l${n}:1` }));
    for (const [n, l] of legs.entries()) sw.dial({ ...l, number: `9876500${n}99`, role: 'customer' });
    await until(() => legs.every((l) => kinds(l.legId).includes('answered')), 'every leg answered', 40_000);
    for (const l of legs) sw.hangup(l.legId);
    await until(() => legs.every((l) => kinds(l.legId).includes('ended')), 'ended', 40_000);
    for (const l of legs) expect(kinds(l.legId)).toEqual(['ringing', 'answered', 'ended']);
    // Losses were made good: ours (requests sent again, answers to the peer's retransmissions sent again),
    // or SIPp's own retransmissions of a response it lost (the same response logged as sent more than once).
    const repaired = () => {
      const { retransmitted, answeredAgain } = sw.transactions.stats;
      const sent = messages().filter((m) => m.direction === 'sent' && m.message.kind === 'response').map((m) => `${header(m.message, 'call-id')}|${header(m.message, 'cseq')}|${m.message.kind === 'response' && m.message.status}`);
      return retransmitted + answeredAgain + (sent.length - new Set(sent).size);
    };
    await until(() => repaired() > 0, 'a loss made good', 20_000);
  }, 90_000);

  it('over TCP: a call rings, answers, bridges and ends', async () => {
    const { sw, kinds, messages } = await setup('tcp');
    const { c, a, ids } = await bridged(sw, kinds, 7);
    await until(() => reinvitesTo(messages(), ids.agent).length === 1, 'bridged');
    sw.hangup(c.legId);
    sw.hangup(a.legId);
    await until(() => [ids.customer, ids.agent].every((id) => of(messages(), id).some((m) => m.direction === 'sent' && m.message.kind === 'response' && /BYE/.test(header(m.message, 'cseq') ?? ''))), 'BYEs answered');
    expect(of(messages(), ids.customer).some((m) => /SIP\/2.0\/TCP/.test(header(m.message, 'via') ?? ''))).toBe(true);
  });

  it('glare: a party re-INVITE crossing ours is 491; ours refused 491 is tried again 2.1 to 4 s later and completes the bridge', async () => {
    const { sw, kinds } = await setup('udp');
    sw.onInbound(async (offer) => {
      offer.bind('g', false);
      return 'accepted';
    });
    const caller = await startSipp({ scenario: scenario('caller-glare-uac.xml'), remote: `127.0.0.1:${sw.port}`, keys: { did: '8000000101', caller: '9876500011' }, args: ['-m', '1'] });
    open.push(caller);
    await until(() => sw.pendingInbound.has('g'), 'the INVITE');
    sw.acceptInbound('g', 'g:cust', '9876500011');
    sw.dial({ callId: 'g', legId: 'g:agent', number: '9100000777', role: 'agent' });
    await until(() => kinds('g:agent').includes('answered'), 'the agent answered');
    const t0 = Date.now();
    sw.bridge('g', 'g:cust', 'g:agent', { record: false });
    const cust = sw.legs.get('g:cust')!;
    const agent = sw.legs.get('g:agent')!;
    await until(() => !cust.reinviting && !agent.reinviting && audioOf(agent.sentSdp ?? '')?.address === '198.51.100.7', 'the bridge done', 15_000);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(2000);
    expect(audioOf(cust.sentSdp!)?.address).toBe(audioOf(agent.remoteSdp!)?.address);
    sw.hangup('g:cust');
    sw.hangup('g:agent');
    expect(await outcome(caller)).toEqual({ code: 0, output: '' });
  }, 30_000);
});
