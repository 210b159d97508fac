/**
 * What the SIP listener answers to bad and stray input (CONTRACT 16, "Bad SIP"): 400 for a request it
 * can answer, nothing for garbage, 481 for unknown dialogs, 483 for Max-Forwards 0, OPTIONS 200,
 * REGISTER 501 without accounts, a bounded number of open transactions per source address, and the
 * answers to INVITEs of a worker that is gone (a 2xx ACKed and ended with BYE, a 487 ACKed).
 */
import dgram from 'node:dgram';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { SipSwitch } from '../../../src/gateways/switch/sip/sip-switch.js';
import { header, parseMessage, type SipRequest, type SipResponse } from '../../../src/gateways/switch/sip/message.js';
import { MAX_INBOUND_PER_ADDRESS } from '../../../src/gateways/switch/sip/inbound.js';
import { until } from '../../support/until.js';

const quietLog = { debug: () => undefined, info: () => undefined, warn: () => undefined };

const request = (method: string, opts: { branch?: string; toTag?: string; maxForwards?: string; cseq?: string; callId?: string } = {}) =>
  [
    `${method} sip:8000000101@127.0.0.1 SIP/2.0`,
    `Via: SIP/2.0/UDP 127.0.0.1:9;branch=${opts.branch ?? `z9hG4bK${Math.random().toString(36).slice(2)}`};rport`,
    `Max-Forwards: ${opts.maxForwards ?? '70'}`,
    'From: <sip:caller@example.com>;tag=abc',
    `To: <sip:8000000101@127.0.0.1>${opts.toTag ? `;tag=${opts.toTag}` : ''}`,
    `Call-ID: ${opts.callId ?? Math.random().toString(36)}`,
    `CSeq: ${opts.cseq ?? `1 ${method}`}`,
    'Content-Length: 0',
    '',
    '',
  ].join('\r\n');

describe('SIP listener', () => {
  const closers: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const c of closers.splice(0)) await c();
  });

  async function open(t1 = 500) {
    const sw = await SipSwitch.start({ host: '127.0.0.1', port: 0, domain: 'pbx.test', trunk: { transport: 'udp', host: '127.0.0.1', port: 9 }, ringTimeoutMs: 1000, log: quietLog, timers: { t1, t2: 8 * t1, t4: 10 * t1 } });
    const client = dgram.createSocket('udp4');
    await new Promise<void>((r) => client.bind(0, '127.0.0.1', () => r()));
    const got: SipResponse[] = [];
    const requests: SipRequest[] = [];
    client.on('message', (buf) => {
      const p = parseMessage(buf);
      if (p.ok && p.message.kind === 'response') got.push(p.message);
      if (p.ok && p.message.kind === 'request') requests.push(p.message);
    });
    closers.push(() => void client.close(), () => sw.close());
    const send = (text: string | Buffer) => client.send(typeof text === 'string' ? Buffer.from(text) : text, sw.port, '127.0.0.1');
    return { sw, got, requests, send, client };
  }

  it('answers OPTIONS 200, unknown dialogs 481, Max-Forwards 0 483, REGISTER 501 without accounts, a malformed request 400; responses go to the source port (rport)', async () => {
    const { got, send, client } = await open();
    send(request('OPTIONS', { callId: 'o1' }));
    send(request('BYE', { toTag: 'nope', callId: 'b1' }));
    send(request('INVITE', { toTag: 'nope', callId: 'i1' }));
    send(request('INFO', { maxForwards: '0', callId: 'm1' }));
    send(request('REGISTER', { callId: 'r1' }));
    send(request('BYE', { cseq: '1 INVITE', callId: 'x1' }));
    const status = (id: string) => got.find((r) => header(r, 'call-id') === id && r.status >= 200)?.status;
    await until(() => ['o1', 'b1', 'i1', 'm1', 'r1', 'x1'].every((id) => status(id) !== undefined), 'every answer');
    expect(['o1', 'b1', 'i1', 'm1', 'r1', 'x1'].map(status)).toEqual([200, 481, 481, 483, 501, 400]);
    const via = header(got.find((r) => header(r, 'call-id') === 'o1')!, 'via')!;
    expect(via).toContain(`rport=${client.address().port}`);
    expect(via).toContain('received=127.0.0.1');
  });

  it('garbage gets no answer and stops nothing; a retransmitted request gets the same answer again', async () => {
    const { got, send } = await open();
    for (let i = 0; i < 200; i++) send(Buffer.from(Array.from({ length: 50 + i }, () => Math.floor(Math.random() * 256))));
    send('INVITE sip:x SIP/2.0\r\n\r\n');
    const opts = request('OPTIONS', { branch: 'z9hG4bKsame', callId: 'again' });
    send(opts);
    await until(() => got.some((r) => header(r, 'call-id') === 'again'), 'the answer');
    send(opts);
    await until(() => got.filter((r) => header(r, 'call-id') === 'again').length === 2, 'the same answer again');
    const [a, b] = got.filter((r) => header(r, 'call-id') === 'again');
    expect(b).toEqual(a);
    expect(got.filter((r) => header(r, 'call-id') !== 'again')).toEqual([]);
  });

  it('one source address has at most MAX_INBOUND_PER_ADDRESS calls offered at once: beyond, 503; another address is served', async () => {
    const { sw, got, send } = await open();
    let offered = 0;
    // The platform never decides: every INVITE it was offered stays open.
    sw.onInbound(() => {
      offered++;
      return new Promise(() => undefined);
    });
    const n = MAX_INBOUND_PER_ADDRESS + 20;
    for (let sent = 0; sent < n; sent += 20) {
      for (let i = sent; i < sent + 20; i++) send(request('INVITE', { callId: `f${i}` }));
      await until(() => new Set(got.map((r) => header(r, 'call-id'))).size >= sent + 20, `batch from ${sent}`);
    }
    const finals = got.filter((r) => r.status >= 200);
    expect(offered).toBe(MAX_INBOUND_PER_ADDRESS);
    expect(finals.map((r) => r.status)).toEqual(Array(20).fill(503));
    const other = dgram.createSocket('udp4');
    closers.push(() => void other.close());
    await new Promise<void>((r) => other.bind(0, '127.0.0.2', () => r()));
    other.send(Buffer.from(request('INVITE', { callId: 'other' })), sw.port, '127.0.0.1');
    await until(() => offered === MAX_INBOUND_PER_ADDRESS + 1, 'another address offered');
  });

  it('a caller that never ACKs our 200 gets it again (Timer G), then BYE at Timer H, and its leg ends', async () => {
    const { sw, got, requests, send } = await open(20);
    const signals: string[] = [];
    sw.onSignal((x) => signals.push(`${x.legId} ${x.kind}`));
    sw.onInbound(async (offer) => {
      offer.bind('n', false);
      return 'accepted';
    });
    send(request('INVITE', { callId: 'noack' }));
    await until(() => sw.pendingInbound.has('n'), 'offered');
    sw.acceptInbound('n', 'n:1', '9876500000');
    await until(() => signals.includes('n:1 ended'), 'the leg ended', 5000);
    expect(got.filter((r) => r.status === 200 && header(r, 'call-id') === 'noack').length).toBeGreaterThan(2);
    // The BYE is sent before the leg's end is signalled; its datagram may still be on its way here.
    await until(() => requests.some((r) => r.method === 'BYE'), 'the BYE');
  });

  it('over TCP: a request split across segments is answered; a stream that is not SIP is closed', async () => {
    const { sw } = await open();
    const sock = net.connect({ host: '127.0.0.1', port: sw.port });
    closers.push(() => void sock.destroy());
    let data = '';
    sock.on('data', (d) => (data += d.toString()));
    await new Promise<void>((r) => sock.once('connect', () => r()));
    const text = request('OPTIONS', { callId: 'tcp1' }).replace('SIP/2.0/UDP', 'SIP/2.0/TCP');
    sock.write(text.slice(0, 40));
    sock.write(text.slice(40));
    await until(() => /SIP\/2\.0 200 OK/.test(data), 'the answer over TCP');
    const bad = net.connect({ host: '127.0.0.1', port: sw.port });
    let closed = false;
    bad.on('close', () => (closed = true));
    bad.on('error', () => undefined);
    bad.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await until(() => closed, 'the bad stream closed');
  });

  it("a 2xx to an INVITE no leg knows (a killed worker's, answered late) is ACKed and ended with BYE; a 487 to one is ACKed", async () => {
    const { sw, requests, send } = await open();
    const response = (status: string, callId: string, branch: string) =>
      [
        `SIP/2.0 ${status}`,
        `Via: SIP/2.0/UDP 127.0.0.1:${sw.port};branch=${branch};rport`,
        'From: <sip:8000000101@pbx.test>;tag=ours1',
        'To: <sip:9876543210@127.0.0.1>;tag=theirs1',
        `Call-ID: ${callId}`,
        'CSeq: 1 INVITE',
        'Contact: <sip:party@127.0.0.1:9>',
        'Content-Length: 0',
        '',
        '',
      ].join('\r\n');
    send(response('200 OK', 'late-answer', 'z9hG4bKgone1'));
    send(response('487 Request Terminated', 'late-cancel', 'z9hG4bKgone2'));
    const of = (id: string) => requests.filter((r) => header(r, 'call-id') === id);
    await until(() => of('late-answer').some((r) => r.method === 'BYE') && of('late-cancel').some((r) => r.method === 'ACK'), 'ACK and BYE, and the ACK of the 487');
    const [ack, bye] = [of('late-answer').find((r) => r.method === 'ACK')!, of('late-answer').find((r) => r.method === 'BYE')!];
    expect(header(ack, 'cseq')).toBe('1 ACK');
    // Retransmitted, it is ACKed again but not ended twice.
    send(response('200 OK', 'late-answer', 'z9hG4bKgone1'));
    await until(() => of('late-answer').filter((r) => r.method === 'ACK').length === 2, 'the retransmission ACKed');
    // (one BYE transaction: its retransmissions, unanswered here, carry its one branch)
    expect(new Set(of('late-answer').filter((r) => r.method === 'BYE').map((r) => header(r, 'via')))).toHaveProperty('size', 1);
    expect(header(bye, 'to')).toMatch(/tag=theirs1/);
    expect(header(bye, 'from')).toMatch(/tag=ours1/);
    expect(bye.uri).toBe('sip:party@127.0.0.1:9');
    // The 487's ACK is the INVITE transaction's own: its branch, CSeq 1 ACK, the response's To.
    const ack487 = of('late-cancel').find((r) => r.method === 'ACK')!;
    expect(header(ack487, 'via')).toMatch(/branch=z9hG4bKgone2/);
    expect(header(ack487, 'cseq')).toBe('1 ACK');
    expect(of('late-cancel').some((r) => r.method === 'BYE')).toBe(false);
  });
});
