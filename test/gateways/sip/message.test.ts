/** SIP message parsing and serializing (RFC 3261 section 7), and a fuzz run: garbage never throws. */
import { describe, expect, it } from 'vitest';
import { MAX_MESSAGE_BYTES, header, headerValues, parseMessage, parseNameAddr, parseUri, parseVia, serialize, tagOf, userOf, type SipRequest } from '../../../src/gateways/switch/sip/message.js';
import { frame } from '../../../src/gateways/switch/sip/transport.js';

const INVITE = [
  'INVITE sip:5551000@example.com SIP/2.0',
  'Via: SIP/2.0/UDP 10.0.0.1:5070;branch=z9hG4bKabc;rport',
  'v: SIP/2.0/UDP 10.0.0.9;branch=z9hG4bKdef',
  'Max-Forwards: 70',
  'f: "Alice, A." <sip:+15550001@example.org>;tag=1928',
  'To: <sip:5551000@example.com>',
  'i: a84b4c76e66710',
  'CSeq: 314159 INVITE',
  'Contact: <sip:alice@10.0.0.1:5070>, <sip:alice@10.0.0.2>',
  'Subject: a long',
  '  folded subject',
  'Content-Type: application/sdp',
  'Content-Length: 4',
  '',
  'v=0\r\nextra beyond Content-Length',
].join('\r\n');

describe('SIP messages', () => {
  it('parses a request: compact names, folded lines, list headers, the body cut to Content-Length', () => {
    const p = parseMessage(Buffer.from(INVITE));
    expect(p.ok).toBe(true);
    const m = (p as { message: SipRequest }).message;
    expect(m).toMatchObject({ kind: 'request', method: 'INVITE', uri: 'sip:5551000@example.com', body: 'v=0\r' });
    expect(headerValues(m, 'via')).toHaveLength(2);
    expect(header(m, 'call-id')).toBe('a84b4c76e66710');
    expect(header(m, 'subject')).toBe('a long folded subject');
    expect(headerValues(m, 'contact')).toEqual(['<sip:alice@10.0.0.1:5070>', '<sip:alice@10.0.0.2>']);
    expect(tagOf(header(m, 'from'))).toBe('1928');
    expect(userOf(header(m, 'from'))).toBe('+15550001');
    expect(parseNameAddr(header(m, 'from')!)!.display).toBe('Alice, A.');
  });

  it('serializes what it parses: the same message again, Content-Length in bytes', () => {
    const m = (parseMessage(Buffer.from(INVITE)) as { message: SipRequest }).message;
    m.body = 'é';
    const again = parseMessage(serialize(m));
    expect(again.ok).toBe(true);
    const m2 = (again as { message: SipRequest }).message;
    expect(m2.body).toBe('é');
    expect(header(m2, 'content-length')).toBe('2');
    expect(m2.headers.filter(([n]) => n !== 'content-length')).toEqual(m.headers.filter(([n]) => n !== 'content-length'));
  });

  it('parses responses, Via, URIs', () => {
    const r = parseMessage(Buffer.from('SIP/2.0 180 Ringing\r\nVia: SIP/2.0/TCP h;branch=z9hG4bK1\r\nFrom: <sip:a@b>;tag=1\r\nTo: <sip:c@d>;tag=2\r\nCall-ID: x\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n'));
    expect(r).toMatchObject({ ok: true, message: { kind: 'response', status: 180, reason: 'Ringing' } });
    expect(parseVia('SIP/2.0/UDP [::1]:5080;branch=z9hG4bKx;rport')).toMatchObject({ transport: 'UDP', host: '::1', port: 5080 });
    expect(parseUri('sip:agent%40x:secret@10.1.1.1:5099;transport=tcp')).toMatchObject({ user: 'agent@x', host: '10.1.1.1', port: 5099 });
    expect(parseUri('sip:10.1.1.1')!.user).toBeNull();
    expect(parseUri('http://x')).toBeNull();
  });

  it('refuses what is not a message, and says why; a request whose headers parsed can be answered 400', () => {
    expect(parseMessage(Buffer.from('hello'))).toMatchObject({ ok: false, reason: 'no end of headers' });
    expect(parseMessage(Buffer.alloc(MAX_MESSAGE_BYTES + 1, 65))).toMatchObject({ ok: false, reason: 'message too large' });
    const noCseq = INVITE.replace('CSeq: 314159 INVITE', 'CSeq: many INVITE');
    const bad = parseMessage(Buffer.from(noCseq));
    expect(bad).toMatchObject({ ok: false, reason: 'bad CSeq' });
    const mismatch = parseMessage(Buffer.from(INVITE.replace('CSeq: 314159 INVITE', 'CSeq: 1 BYE')));
    expect(mismatch).toMatchObject({ ok: false, reason: 'CSeq method does not match' });
    expect((mismatch as { partial?: SipRequest }).partial?.method).toBe('INVITE');
    expect(parseMessage(Buffer.from(INVITE.replace('Content-Length: 4', 'Content-Length: 999')))).toMatchObject({ ok: false });
    expect(parseMessage(Buffer.from(INVITE.replace('Content-Length: 4', 'Content-Length: 4')), true)).toMatchObject({ ok: true });
    expect(parseMessage(Buffer.from(INVITE.replace('Content-Length: 4\r\n', '')), true)).toMatchObject({ ok: false, reason: 'Content-Length required on a stream' });
  });

  it('frames a TCP stream by Content-Length, across chunks, skipping keep-alive CRLFs; an unframed stream is bad', () => {
    const one = Buffer.from(INVITE.replace('\nextra beyond Content-Length', ''));
    const two = Buffer.concat([Buffer.from('\r\n\r\n'), one, one]);
    const a = frame(two.subarray(0, one.length + 10));
    expect(a.messages).toHaveLength(1);
    const b = frame(Buffer.concat([a.rest, two.subarray(one.length + 10)]));
    expect(b.messages).toHaveLength(1);
    expect(b.rest.length).toBe(0);
    expect(parseMessage(b.messages[0]!, true).ok).toBe(true);
    expect(frame(Buffer.from('INVITE x SIP/2.0\r\nVia: y\r\n\r\n')).bad).toBe(true);
    expect(frame(Buffer.alloc(MAX_MESSAGE_BYTES, 65)).bad).toBe(true);
  });

  it('fuzz: random bytes and mutated messages never throw', () => {
    let seed = 12345;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
    const base = Buffer.from(INVITE);
    const alphabet = Buffer.from(':;,<>"\\\r\n \t=@SIP/2.0z9hG4bK0123456789');
    let ok = 0;
    for (let i = 0; i < 20_000; i++) {
      let buf: Buffer;
      if (i % 4 === 0) buf = Buffer.from(Array.from({ length: Math.floor(rnd() * 600) }, () => Math.floor(rnd() * 256)));
      else {
        buf = Buffer.from(base);
        const edits = 1 + Math.floor(rnd() * 8);
        for (let e = 0; e < edits; e++) {
          const at = Math.floor(rnd() * buf.length);
          const kind = rnd();
          if (kind < 0.5) buf[at] = alphabet[Math.floor(rnd() * alphabet.length)]!;
          else if (kind < 0.75) buf = Buffer.concat([buf.subarray(0, at), buf.subarray(at + 1 + Math.floor(rnd() * 20))]);
          else buf = Buffer.concat([buf.subarray(0, at), alphabet.subarray(0, Math.floor(rnd() * alphabet.length)), buf.subarray(at)]);
        }
      }
      const p = parseMessage(buf, i % 2 === 0);
      frame(buf);
      if (p.ok) {
        ok++;
        // What parses serializes and parses again.
        expect(parseMessage(serialize(p.message)).ok).toBe(true);
      }
    }
    expect(ok).toBeGreaterThan(0);
  });
});
