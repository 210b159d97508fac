/** RFC 3261 transactions without a network: retransmissions, matching, and the per-address bound. */
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_SERVER_TX_PER_ADDRESS, Transactions, responseTo, type ServerTx } from '../../../src/gateways/switch/sip/transactions.js';
import { parseMessage, type SipMessage, type SipRequest } from '../../../src/gateways/switch/sip/message.js';
import type { Peer } from '../../../src/gateways/switch/sip/transport.js';
import { until } from '../../support/until.js';

const req = (method: string, callId: string, branch = `z9hG4bK${callId}`) =>
  (parseMessage(Buffer.from(`${method} sip:a@b SIP/2.0\r\nVia: SIP/2.0/UDP 10.0.0.1:5060;branch=${branch}\r\nFrom: <sip:x@y>;tag=1\r\nTo: <sip:a@b>\r\nCall-ID: ${callId}\r\nCSeq: 1 ${method}\r\nContent-Length: 0\r\n\r\n`)) as { message: SipRequest }).message;

describe('SIP transactions', () => {
  const open: Transactions[] = [];
  afterEach(() => open.splice(0).forEach((t) => t.close()));

  function make() {
    const sent: Array<{ m: SipMessage; to: Peer }> = [];
    const requests: ServerTx[] = [];
    const t = new Transactions({ send: (m, to) => sent.push({ m, to }), sentBy: '127.0.0.1:5099' }, { t1: 20, t2: 160, t4: 200 }, { onRequest: (_r, tx) => requests.push(tx), onAck: () => undefined, onStray2xx: () => undefined });
    open.push(t);
    return { t, sent, requests };
  }
  const from = (host: string): Peer => ({ transport: 'udp', host, port: 5060 });

  it('a client INVITE over UDP is retransmitted, doubling, until a response; Timer B ends it', async () => {
    const { t, sent } = make();
    let timedOut = false;
    t.request(req('INVITE', 'c1'), from('10.0.0.9'), { onResponse: () => undefined, onTimeout: () => (timedOut = true) });
    await until(() => timedOut, 'timer B', 5000);
    // Due at 0, 20, 60, 140, 300, 620 and 1260 ms, within 64*T1 = 1280 ms (a loaded machine's timers may run late).
    expect(sent.length).toBeGreaterThanOrEqual(4);
    expect(sent.length).toBeLessThanOrEqual(7);
    expect(t.stats.retransmitted).toBe(sent.length - 1);
    expect(new Set(sent.map((s) => s.m.headers.find(([n]) => n === 'via')![1])).size).toBe(1);
  });

  it('holds at most MAX_SERVER_TX_PER_ADDRESS unanswered server transactions per address; answering one frees its place', () => {
    const { t, requests } = make();
    for (let i = 0; i < MAX_SERVER_TX_PER_ADDRESS + 10; i++) t.receive(req('OPTIONS', `s${i}`), from('192.0.2.1'));
    expect(requests.length).toBe(MAX_SERVER_TX_PER_ADDRESS);
    expect(t.stats.dropped).toBe(10);
    t.receive(req('OPTIONS', 'other'), from('192.0.2.2'));
    expect(requests.length).toBe(MAX_SERVER_TX_PER_ADDRESS + 1);
    requests[0]!.respond(responseTo(requests[0]!.request, 200, 'OK'));
    t.receive(req('OPTIONS', 'again'), from('192.0.2.1'));
    expect(requests.length).toBe(MAX_SERVER_TX_PER_ADDRESS + 2);
  });
});
