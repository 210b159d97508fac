/**
 * SIP transports: UDP and TCP on one address and port (RFC 3261 section 18). TCP is framed by
 * Content-Length; a connection that sends more than a message's worth without framing, or opens
 * beyond its address's share, is closed. Nothing a peer sends throws out of here: a message that does
 * not parse goes to `onBad` (which may answer 400) or is dropped.
 */
import dgram from 'node:dgram';
import net from 'node:net';
import { MAX_MESSAGE_BYTES, headerEnd, parseMessage, serialize, type SipMessage, type SipRequest } from './message.js';

export type TransportName = 'udp' | 'tcp';

export interface Peer {
  transport: TransportName;
  host: string;
  port: number;
}

export interface TransportHandlers {
  onMessage(message: SipMessage, source: Peer): void;
  /** A request that did not parse but whose headers did: it can be answered 400. */
  onBad(partial: SipRequest, reason: string, source: Peer): void;
}

export interface TransportLog {
  debug(obj: object, msg: string): void;
}

const MAX_TCP_PER_ADDRESS = 32;
const TCP_IDLE_MS = 5 * 60_000;

export const peerKey = (p: Peer): string => `${p.transport}:${p.host}:${p.port}`;

export class SipTransport {
  private readonly tcpConns = new Map<string, net.Socket>();
  private readonly perAddress = new Map<string, number>();
  private closed = false;
  /** UDP sends handed to the socket and not yet done: close() lets them go out first (a stop's BYEs). */
  private sending = 0;
  private drained: (() => void) | null = null;

  private constructor(
    private readonly udp: dgram.Socket,
    private readonly tcp: net.Server,
    private readonly handlers: TransportHandlers,
    private readonly log: TransportLog,
  ) {}

  /** Binds UDP and TCP on host:port (port 0: one free port for both). Rejects when either cannot be bound. */
  static async listen(host: string, port: number, handlers: TransportHandlers, log: TransportLog): Promise<SipTransport> {
    for (let attempt = 0; ; attempt++) {
      const udp = dgram.createSocket({ type: net.isIPv6(host) ? 'udp6' : 'udp4' });
      const tcp = net.createServer();
      try {
        await new Promise<void>((resolve, reject) => {
          udp.once('error', reject);
          udp.bind(port, host, () => resolve());
        });
        const bound = udp.address().port;
        await new Promise<void>((resolve, reject) => {
          tcp.once('error', reject);
          tcp.listen(bound, host, () => resolve());
        });
        const t = new SipTransport(udp, tcp, handlers, log);
        t.wire();
        return t;
      } catch (err) {
        udp.close();
        tcp.close();
        // With port 0 the TCP side of the UDP port chosen may be taken: pick again.
        if (port !== 0 || attempt >= 5) throw err;
      }
    }
  }

  get host(): string {
    return this.udp.address().address;
  }

  get port(): number {
    return this.udp.address().port;
  }

  send(message: SipMessage, to: Peer): void {
    if (this.closed) return;
    const buf = serialize(message);
    if (to.transport === 'udp') {
      this.sending++;
      this.udp.send(buf, to.port, to.host, (err) => {
        if (err) this.log.debug({ err: err.message }, 'sip udp send failed');
        if (--this.sending === 0) this.drained?.();
      });
      return;
    }
    let sock = this.tcpConns.get(peerKey(to));
    if (!sock || sock.destroyed) {
      sock = net.connect({ host: to.host, port: to.port });
      this.adopt(sock, to);
    }
    sock.write(buf);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.sending > 0) {
      await new Promise<void>((resolve) => {
        this.drained = resolve;
        setTimeout(resolve, 1000).unref();
      });
    }
    // Written data goes out before the connection ends; a peer that keeps its side open is cut shortly after.
    for (const s of this.tcpConns.values()) {
      s.end();
      setTimeout(() => s.destroy(), 200).unref();
    }
    this.tcpConns.clear();
    await Promise.all([new Promise<void>((r) => this.udp.close(() => r())), new Promise<void>((r) => this.tcp.close(() => r()))]);
  }

  private wire() {
    this.udp.on('message', (buf, rinfo) => this.deliver(buf, { transport: 'udp', host: rinfo.address, port: rinfo.port }, false));
    this.udp.on('error', (err) => this.log.debug({ err: err.message }, 'sip udp error'));
    this.tcp.on('connection', (sock) => {
      const host = sock.remoteAddress ?? '';
      const n = this.perAddress.get(host) ?? 0;
      if (n >= MAX_TCP_PER_ADDRESS || this.closed) return void sock.destroy();
      this.adopt(sock, { transport: 'tcp', host: normalizeHost(host), port: sock.remotePort ?? 0 });
    });
    this.tcp.on('error', (err) => this.log.debug({ err: err.message }, 'sip tcp error'));
  }

  private adopt(sock: net.Socket, peer: Peer) {
    const key = peerKey(peer);
    this.tcpConns.set(key, sock);
    this.perAddress.set(peer.host, (this.perAddress.get(peer.host) ?? 0) + 1);
    sock.setNoDelay(true);
    sock.setTimeout(TCP_IDLE_MS, () => sock.destroy());
    let pending: Buffer = Buffer.alloc(0);
    sock.on('data', (chunk: Buffer) => {
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      const r = frame(pending);
      for (const m of r.messages) this.deliver(m, peer, true);
      if (r.bad) return void sock.destroy();
      pending = r.rest;
    });
    sock.on('error', (err) => this.log.debug({ err: err.message }, 'sip tcp connection error'));
    sock.on('close', () => {
      if (this.tcpConns.get(key) === sock) this.tcpConns.delete(key);
      const left = (this.perAddress.get(peer.host) ?? 1) - 1;
      if (left <= 0) this.perAddress.delete(peer.host);
      else this.perAddress.set(peer.host, left);
    });
  }

  private deliver(buf: Buffer, source: Peer, stream: boolean) {
    if (this.closed) return;
    try {
      const parsed = parseMessage(buf, stream);
      if (parsed.ok) this.handlers.onMessage(parsed.message, source);
      else if (parsed.partial) this.handlers.onBad(parsed.partial, parsed.reason, source);
      else this.log.debug({ reason: parsed.reason, from: `${source.host}:${source.port}` }, 'sip message dropped');
    } catch (err) {
      // A handler's bug must not take the listener down with it.
      this.log.debug({ err: (err as Error).message }, 'sip message handling failed');
    }
  }
}

const normalizeHost = (h: string) => h.replace(/^::ffff:/, '');

/** Splits a TCP byte stream into messages by Content-Length; `bad` when it cannot be framed. */
export function frame(buf: Buffer): { messages: Buffer[]; rest: Buffer; bad: boolean } {
  const messages: Buffer[] = [];
  let rest = buf;
  for (;;) {
    // Keep-alive CRLFs (RFC 5626) between messages.
    let skip = 0;
    while (skip < rest.length && (rest[skip] === 0x0d || rest[skip] === 0x0a)) skip++;
    rest = rest.subarray(skip);
    if (rest.length === 0) return { messages, rest, bad: false };
    const text = rest.subarray(0, MAX_MESSAGE_BYTES).toString('latin1');
    const he = headerEnd(text);
    if (!he) return { messages, rest, bad: rest.length >= MAX_MESSAGE_BYTES };
    const cl = /^(?:content-length|l)[ \t]*:[ \t]*(\d{1,6})[ \t]*$/im.exec(text.slice(0, he.end));
    if (!cl) return { messages, rest, bad: true };
    const total = he.bodyStart + Number(cl[1]);
    if (total > MAX_MESSAGE_BYTES) return { messages, rest, bad: true };
    if (rest.length < total) return { messages, rest, bad: false };
    messages.push(Buffer.from(rest.subarray(0, total)));
    rest = rest.subarray(total);
  }
}
