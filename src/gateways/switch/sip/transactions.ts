/**
 * RFC 3261 section 17 transactions: INVITE and non-INVITE, client and server, with the timers and
 * the UDP retransmissions (A/B/D, E/F/K, G/H/I, J). A 2xx to an INVITE is retransmitted here until
 * its ACK arrives (the UAS core's duty, RFC 3261 13.3.1.4; kept with the transaction as RFC 6026's
 * Accepted state does), and a retransmitted 2xx is handed to `onStray2xx` so the dialog re-ACKs it.
 */
import { randomBase64url, randomHex } from './random-ids.js';
import { header, headerValues, parseCSeq, parseNameAddr, parseVia, type SipMessage, type SipRequest, type SipResponse } from './message.js';
import type { Peer } from './transport.js';

export interface Timers {
  t1: number;
  t2: number;
  t4: number;
}

export const DEFAULT_TIMERS: Timers = { t1: 500, t2: 4000, t4: 5000 };

/**
 * Server transactions not answered yet that one source address may hold (a flood from one address
 * cannot starve the rest; answered ones only wait for retransmissions and are not counted), and
 * server transactions of any state in all.
 */
export const MAX_SERVER_TX_PER_ADDRESS = 200;
export const MAX_SERVER_TX = 100_000;

export interface ClientCallbacks {
  onResponse(res: SipResponse): void;
  /** No final response in time (Timer B/F) or the transport failed: the request is over. */
  onTimeout(): void;
}

export interface ServerTx {
  readonly request: SipRequest;
  readonly source: Peer;
  respond(res: SipResponse): void;
}

export interface TransactionHandlers {
  onRequest(req: SipRequest, tx: ServerTx): void;
  /** An ACK to a 2xx (its own transaction), or to nothing known. */
  onAck(ack: SipRequest, source: Peer): void;
  /** A 2xx to an INVITE whose client transaction is gone: the dialog re-sends its ACK (or, when none knows it, ACKs and ends it). */
  onStray2xx(res: SipResponse, source: Peer): void;
  /** Our 2xx to this INVITE never got its ACK (Timer H): the dialog is to be ended (RFC 3261 13.3.1.4). */
  onNoAck?(invite: SipRequest): void;
}

export interface Sender {
  send(m: SipMessage, to: Peer): void;
  readonly sentBy: string;
}

export const newBranch = () => `z9hG4bK${randomBase64url(9)}`;
export const newTag = () => randomHex(6);

const branchOf = (m: SipMessage) => parseVia(headerValues(m, 'via')[0] ?? '')?.params.get('branch') ?? '';
const cseqOf = (m: SipMessage) => parseCSeq(header(m, 'cseq') ?? '')!;

interface ClientTx {
  req: SipRequest;
  to: Peer;
  cb: ClientCallbacks;
  state: 'calling' | 'proceeding' | 'completed' | 'accepted';
  timers: NodeJS.Timeout[];
  ack?: SipRequest;
}

interface ServerTxState {
  key: string;
  req: SipRequest;
  source: Peer;
  last: SipResponse | null;
  state: 'proceeding' | 'completed' | 'accepted' | 'confirmed';
  timers: NodeJS.Timeout[];
  /** Counted in its address's share until it is answered. */
  counted: boolean;
}

export class Transactions {
  private readonly clients = new Map<string, ClientTx>();
  private readonly servers = new Map<string, ServerTxState>();
  /** INVITE server transactions whose 2xx waits for its ACK, by Call-ID and CSeq number. */
  private readonly awaitingAck = new Map<string, ServerTxState>();
  private readonly perAddress = new Map<string, number>();
  private closed = false;
  /** Requests and responses sent again for a loss (ours, or the peer's retransmission answered again). */
  readonly stats = { retransmitted: 0, answeredAgain: 0, /** requests dropped: their address held its share of transactions */ dropped: 0 };

  constructor(
    private readonly sender: Sender,
    private readonly timers: Timers,
    private readonly handlers: TransactionHandlers,
  ) {}

  get open(): number {
    return this.clients.size + this.servers.size;
  }

  /** Sends a request in a new client transaction; its top Via is set here (a CANCEL passes its INVITE's branch). */
  request(req: SipRequest, to: Peer, cb: ClientCallbacks, branch = newBranch()): void {
    if (this.closed) return;
    req.headers = req.headers.filter(([n]) => n !== 'via');
    req.headers.unshift(['via', `SIP/2.0/${to.transport.toUpperCase()} ${this.sender.sentBy};branch=${branch};rport`]);
    const key = `${branch}|${req.method}`;
    const tx: ClientTx = { req, to, cb, state: 'calling', timers: [] };
    this.clients.set(key, tx);
    this.sender.send(req, to);
    const { t1, t2 } = this.timers;
    if (to.transport === 'udp') {
      // Timer A / E: retransmit, doubling (non-INVITE capped at T2).
      const resend = (interval: number) => {
        tx.timers.push(
          setTimeout(() => {
            if (tx.state === 'calling' || (tx.state === 'proceeding' && req.method !== 'INVITE')) {
              this.stats.retransmitted++;
              this.sender.send(req, to);
              resend(req.method === 'INVITE' ? interval * 2 : Math.min(interval * 2, t2));
            }
          }, interval),
        );
      };
      resend(t1);
    }
    // Timer B / F.
    tx.timers.push(
      setTimeout(() => {
        if (tx.state === 'calling' || tx.state === 'proceeding') {
          this.endClient(key);
          cb.onTimeout();
        }
      }, 64 * t1),
    );
  }

  receive(m: SipMessage, source: Peer): void {
    if (this.closed) return;
    if (m.kind === 'response') return this.clientResponse(m, source);
    this.serverRequest(m, source);
  }

  close(): void {
    this.closed = true;
    for (const tx of this.clients.values()) tx.timers.forEach(clearTimeout);
    for (const tx of this.servers.values()) tx.timers.forEach(clearTimeout);
    this.clients.clear();
    this.servers.clear();
    this.awaitingAck.clear();
  }

  // --- client side --------------------------------------------------------------------------

  private clientResponse(res: SipResponse, source: Peer) {
    const cseq = cseqOf(res);
    const key = `${branchOf(res)}|${cseq.method}`;
    const tx = this.clients.get(key);
    if (!tx) {
      if (cseq.method === 'INVITE' && res.status >= 200 && res.status < 300) this.handlers.onStray2xx(res, source);
      // A failure to an INVITE of a process gone (a previous worker's, cancelled by this one): its ACK, so the peer stops resending it.
      else if (cseq.method === 'INVITE' && res.status >= 300) this.sender.send(ackForStray(res), source);
      return;
    }
    const invite = tx.req.method === 'INVITE';
    if (res.status < 200) {
      if (tx.state === 'calling') tx.state = 'proceeding';
      if (tx.state === 'proceeding') tx.cb.onResponse(res);
      return;
    }
    if (invite && res.status < 300) {
      // 2xx: the TU ACKs it; retransmissions of it within 64*T1 go to the TU again (it re-ACKs).
      if (tx.state === 'accepted') {
        this.stats.answeredAgain++;
        return this.handlers.onStray2xx(res, source);
      }
      this.clearTimers(tx);
      tx.state = 'accepted';
      tx.timers.push(setTimeout(() => this.endClient(key), 64 * this.timers.t1));
      tx.cb.onResponse(res);
      return;
    }
    if (tx.state === 'completed' || tx.state === 'accepted') {
      // A retransmitted final response: the ACK was lost (INVITE), or nothing to do.
      if (tx.ack) {
        this.stats.answeredAgain++;
        this.sender.send(tx.ack, tx.to);
      }
      return;
    }
    this.clearTimers(tx);
    tx.state = 'completed';
    if (invite) {
      tx.ack = ackFor(tx.req, res);
      this.sender.send(tx.ack, tx.to);
    }
    // Timer D (32 s, at least) / K (T4): absorb retransmissions on UDP; nothing to wait for on TCP.
    const linger = tx.to.transport === 'udp' ? (invite ? Math.max(64 * this.timers.t1, 32_000) : this.timers.t4) : 0;
    tx.timers.push(setTimeout(() => this.endClient(key), linger));
    tx.cb.onResponse(res);
  }

  private endClient(key: string) {
    const tx = this.clients.get(key);
    if (!tx) return;
    this.clearTimers(tx);
    this.clients.delete(key);
  }

  // --- server side --------------------------------------------------------------------------

  private serverRequest(req: SipRequest, source: Peer) {
    const via = parseVia(headerValues(req, 'via')[0] ?? '')!;
    const branch = via.params.get('branch') ?? '';
    const cseq = cseqOf(req);
    if (req.method === 'ACK') {
      const accepted = this.awaitingAck.get(`${header(req, 'call-id')}|${cseq.seq}`);
      if (accepted && branchOf(req) !== branchOf(accepted.req)) {
        accepted.state = 'confirmed';
        this.awaitingAck.delete(`${header(req, 'call-id')}|${cseq.seq}`);
        this.endServer(accepted.key);
        return this.handlers.onAck(req, source);
      }
      const tx = this.servers.get(`${branch}|${via.host}:${via.port ?? ''}|INVITE`);
      if (tx && tx.state === 'completed') {
        // ACK to our non-2xx final: Timer I, then done.
        tx.state = 'confirmed';
        this.clearTimers(tx);
        tx.timers.push(setTimeout(() => this.endServer(tx.key), source.transport === 'udp' ? this.timers.t4 : 0));
        return;
      }
      if (!tx) this.handlers.onAck(req, source);
      return;
    }
    // Branches without the RFC 3261 cookie come from RFC 2543 peers: matched on Call-ID and CSeq as well.
    const key = `${branch}|${via.host}:${via.port ?? ''}|${req.method}${branch.startsWith('z9hG4bK') ? '' : `|${header(req, 'call-id')}|${cseq.seq}`}`;
    const known = this.servers.get(key);
    if (known) {
      // A retransmitted request: the last response again.
      if (known.last) {
        this.stats.answeredAgain++;
        this.sender.send(known.last, responseTarget(known.req, known.source));
      }
      return;
    }
    const n = this.perAddress.get(source.host) ?? 0;
    if (n >= MAX_SERVER_TX_PER_ADDRESS || this.servers.size >= MAX_SERVER_TX) return void this.stats.dropped++;
    this.perAddress.set(source.host, n + 1);
    const tx: ServerTxState = { key, req, source, last: null, state: 'proceeding', timers: [], counted: true };
    this.servers.set(key, tx);
    // A server transaction nobody answers still ends (the TU must answer; this bounds the table).
    tx.timers.push(setTimeout(() => this.endServer(key), 64 * this.timers.t1 + 180_000));
    const handle: ServerTx = { request: req, source, respond: (res) => this.respond(tx, res) };
    if (req.method === 'INVITE') this.respond(tx, responseTo(req, 100, 'Trying', [], '', source));
    this.handlers.onRequest(req, handle);
  }

  private respond(tx: ServerTxState, res: SipResponse) {
    if (this.closed || !this.servers.has(tx.key) || tx.state !== 'proceeding') return;
    tx.last = res;
    const target = responseTarget(tx.req, tx.source);
    this.sender.send(res, target);
    if (res.status < 200) return;
    this.uncount(tx);
    this.clearTimers(tx);
    const { t1, t2 } = this.timers;
    const invite = tx.req.method === 'INVITE';
    if (!invite) {
      tx.state = 'completed';
      // Timer J: answer retransmissions of the request.
      tx.timers.push(setTimeout(() => this.endServer(tx.key), tx.source.transport === 'udp' ? 64 * t1 : 0));
      return;
    }
    tx.state = res.status < 300 ? 'accepted' : 'completed';
    if (tx.state === 'accepted') this.awaitingAck.set(`${header(tx.req, 'call-id')}|${cseqOf(tx.req).seq}`, tx);
    if (tx.source.transport === 'udp' || tx.state === 'accepted') {
      // Timer G: retransmit the final response until the ACK (a 2xx on every transport, RFC 3261 13.3.1.4).
      const resend = (interval: number) => {
        tx.timers.push(
          setTimeout(() => {
            if (tx.state !== 'accepted' && tx.state !== 'completed') return;
            this.stats.retransmitted++;
            this.sender.send(res, target);
            resend(Math.min(interval * 2, t2));
          }, interval),
        );
      };
      if (tx.source.transport === 'udp') resend(t1);
    }
    // Timer H: no ACK after 64*T1, the transaction ends; a 2xx's dialog is told, to end the call.
    tx.timers.push(
      setTimeout(() => {
        const unacked = tx.state === 'accepted';
        this.awaitingAck.delete(`${header(tx.req, 'call-id')}|${cseqOf(tx.req).seq}`);
        this.endServer(tx.key);
        if (unacked) this.handlers.onNoAck?.(tx.req);
      }, 64 * t1),
    );
  }

  private endServer(key: string) {
    const tx = this.servers.get(key);
    if (!tx) return;
    this.clearTimers(tx);
    this.servers.delete(key);
    this.uncount(tx);
  }

  private uncount(tx: ServerTxState) {
    if (!tx.counted) return;
    tx.counted = false;
    const left = (this.perAddress.get(tx.source.host) ?? 1) - 1;
    if (left <= 0) this.perAddress.delete(tx.source.host);
    else this.perAddress.set(tx.source.host, left);
  }

  private clearTimers(tx: { timers: NodeJS.Timeout[] }) {
    tx.timers.forEach(clearTimeout);
    tx.timers = [];
  }
}

/**
 * Where a response goes (RFC 3261 18.2.2 with RFC 3581): over TCP back on the connection; over UDP
 * to the source address, and to the source port when the Via asked for `rport`.
 */
export function responseTarget(req: SipRequest, source: Peer): Peer {
  if (source.transport === 'tcp') return source;
  const via = parseVia(headerValues(req, 'via')[0] ?? '');
  const port = via?.params.has('rport') ? source.port : (via?.port ?? 5060);
  return { transport: 'udp', host: source.host, port };
}

/** A response to `req` with its Via, From, To, Call-ID and CSeq (and `received`/`rport` on the top Via). */
export function responseTo(req: SipRequest, status: number, reason: string, extra: Array<[string, string]> = [], body = '', source?: Peer): SipResponse {
  const headers: Array<[string, string]> = [];
  let first = true;
  for (const [n, v] of req.headers) {
    if (n === 'via') {
      if (first && source) headers.push(['via', stampVia(v, source)]);
      else headers.push([n, v]);
      first = false;
    } else if (n === 'from' || n === 'to' || n === 'call-id' || n === 'cseq') headers.push([n, v]);
  }
  return { kind: 'response', status, reason, headers: [...headers, ...extra], body };
}

/** RFC 3581: the top Via of a response carries the address and port the request came from. */
function stampVia(v: string, source: Peer): string {
  const parts = v.split(';').map((p) => p.trim());
  const out = [parts[0]!, ...parts.slice(1).filter((p) => !/^(received|rport)(=|$)/i.test(p))];
  out.push(`received=${source.host}`);
  if (parts.some((p) => /^rport$/i.test(p) || /^rport=/i.test(p))) out.push(`rport=${source.port}`);
  return out.join(';');
}

/** The ACK of a non-2xx final response: same transaction (RFC 3261 17.1.1.3). */
/** The ACK of a non-2xx final response with no transaction: from the response alone (its top Via is ours; the To's URI stands for the Request-URI). */
function ackForStray(res: SipResponse): SipRequest {
  const keep = ['from', 'to', 'call-id'];
  const headers: Array<[string, string]> = [['via', header(res, 'via') ?? ''], ['max-forwards', '70'], ...res.headers.filter(([n]) => keep.includes(n)), ['cseq', `${cseqOf(res).seq} ACK`]];
  const uri = parseNameAddr(header(res, 'to') ?? '')?.uri ?? '';
  return { kind: 'request', method: 'ACK', uri, headers, body: '' };
}

function ackFor(req: SipRequest, res: SipResponse): SipRequest {
  const headers: Array<[string, string]> = [];
  for (const [n, v] of req.headers) {
    if (n === 'via') {
      if (!headers.some(([h]) => h === 'via')) headers.push([n, v]);
    } else if (n === 'from' || n === 'call-id' || n === 'route' || n === 'max-forwards') headers.push([n, v]);
  }
  headers.push(['to', header(res, 'to') ?? header(req, 'to')!], ['cseq', `${cseqOf(req).seq} ACK`]);
  return { kind: 'request', method: 'ACK', uri: req.uri, headers, body: '' };
}
