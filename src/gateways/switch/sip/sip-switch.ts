/**
 * The Switch port on SIP (CONTRACT section 16): a back-to-back user agent with third-party call
 * control (RFC 3725) and no media server. Each leg is a dialog of its own. A dialled leg gets an
 * INVITE without SDP (the party's 200 carries its offer, answered on hold in the ACK); an inbound
 * caller's offer is answered on hold in the 200. Bridging re-INVITEs one party with the other's
 * description and the other with the first one's answer, so each last received the other's media.
 * Incoming requests are handled in inbound.ts; this file holds the legs and the platform's orders.
 */
import { EventEmitter } from 'node:events';
import type { DialRequest, EndReason, InboundDecision, InboundOffer, LegRole, Switch, SwitchSignal } from '../port.js';
import { header, type SipRequest, type SipResponse } from './message.js';
import { SipTransport, type Peer } from './transport.js';
import { DEFAULT_TIMERS, Transactions, newBranch, newTag, responseTo, type ServerTx, type Timers } from './transactions.js';
import { destination, dialogKey, hostPart, inDialog, learnFromResponse, newCallId, peerOf, ALLOW, type Dialog } from './dialog.js';
import { holdSdp, isSdp } from './sdp.js';
import { handleRequest } from './inbound.js';
import { reinvite } from './reinvite.js';
import type { Leg } from './leg.js';
import { Registrar, type SipAccounts } from './registrar.js';
import { DialogKeeper, endLostDialogs, endStrayAnswer, type DialogStore } from './lost-dialogs.js';
import type { SipLog, SwitchCore } from './switch-core.js';
export type { Leg } from './leg.js';
export type { SipLog } from './switch-core.js';

export interface SipSwitchOptions {
  host: string;
  port: number;
  domain: string;
  trunk: Peer;
  ringTimeoutMs: number;
  log: SipLog;
  /** The address put in Via, Contact and SDP origin lines; SIP_HOST unless that is a wildcard. */
  advertise?: string;
  timers?: Timers;
  now?: () => number;
  /** Agents' SIP accounts: with them, REGISTER is answered and agents are rung at their phones. */
  accounts?: SipAccounts;
  /** Where answered legs' dialogs are kept, for the next worker to end them should this one be killed. */
  dialogs?: DialogStore;
}

export class SipSwitch implements Switch, SwitchCore {
  readonly mixesMedia = false;
  readonly legs = new Map<string, Leg>();
  /** Legs by dialog (Call-ID and our tag), for requests inside them. */
  readonly dialogs = new Map<string, Leg>();
  /** Inbound INVITEs the platform accepted, by call id, until acceptInbound picks them up. */
  readonly pendingInbound = new Map<string, Leg>();
  private transactionsOrNull: Transactions | null = null;
  private transportOrNull: SipTransport | null = null;
  inboundHandler: ((offer: InboundOffer) => Promise<InboundDecision>) | null = null;
  readonly advertise: string;
  readonly registrar: Registrar | null;
  private readonly emitter = new EventEmitter();
  private readonly now: () => number;
  private closed = false;
  private readonly keeper: DialogKeeper | null;
  /** Stray 2xx already ended (lost-dialogs.ts), until their retransmissions stop. */
  private readonly strays = new Set<string>();

  constructor(readonly options: SipSwitchOptions) {
    this.keeper = options.dialogs ? new DialogKeeper(options.dialogs, options.log) : null;
    this.now = options.now ?? Date.now;
    this.advertise = options.advertise ?? options.host;
    this.emitter.setMaxListeners(0);
    this.registrar = options.accounts
      ? new Registrar({
          domain: options.domain,
          aliases: [this.advertise, options.host],
          accounts: options.accounts,
          now: this.now,
          respond: (tx, status, reason, extra = []) => tx.respond(this.response(tx, status, reason, extra, '', newTag())),
        })
      : null;
  }

  /** A switch listening on SIP_HOST:SIP_PORT. */
  static async start(options: SipSwitchOptions): Promise<SipSwitch> {
    const sw = new SipSwitch(options);
    await sw.listen();
    return sw;
  }

  /** Binds SIP_HOST:SIP_PORT (UDP and TCP); rejects when it cannot. */
  async listen(): Promise<void> {
    if (this.transportOrNull || this.closed) return;
    const transport = await SipTransport.listen(this.options.host, this.options.port, {
      onMessage: (m, source) => this.transactionsOrNull?.receive(m, source),
      onBad: (partial, reason, source) => this.badRequest(partial, reason, source),
    }, this.options.log);
    this.transportOrNull = transport;
    this.transactionsOrNull = new Transactions(
      { send: (m, to) => transport.send(m, to), sentBy: `${hostPart(this.advertise)}:${transport.port}` },
      this.options.timers ?? DEFAULT_TIMERS,
      {
        onRequest: (req, tx) => handleRequest(this, req, tx),
        onAck: () => undefined,
        onStray2xx: (res, source) => this.reAck(res, source),
        onNoAck: (invite) => this.noAck(invite),
      },
    );
  }

  get transport(): SipTransport {
    if (!this.transportOrNull) throw new Error('the SIP switch is not listening');
    return this.transportOrNull;
  }

  get transactions(): Transactions {
    if (!this.transactionsOrNull) throw new Error('the SIP switch is not listening');
    return this.transactionsOrNull;
  }

  get port(): number { return this.transport.port; }
  get contact(): string { return `<sip:ct@${hostPart(this.advertise)}:${this.transport.port}>`; }
  onSignal(listener: (signal: SwitchSignal) => void): void { this.emitter.on('signal', listener); }
  onInbound(handler: (offer: InboundOffer) => Promise<InboundDecision>): void { this.inboundHandler = handler; }
  activeLegs(): string[] { return [...this.legs.keys()]; }
  hasLeg(legId: string): boolean { return this.legs.has(legId); }

  /** Taking the switch over: the legs a killed worker left get BYE, or CANCEL when ringing (lost-dialogs.ts). */
  async recover(): Promise<void> {
    if (this.options.dialogs && this.transactionsOrNull) await endLostDialogs(this.options.dialogs, this.transactions, this.contact, this.options.log);
  }

  dial(request: DialRequest): void {
    if (this.closed || this.legs.has(request.legId)) return;
    if (!this.transportOrNull) {
      // Not listening (a worker without its SIP port): the leg fails as a switch that cannot reach anyone.
      const leg = this.newLeg(request.callId, request.legId, request.role, 'out', 'ending', { sipCallId: '', localTag: '' } as Dialog);
      this.legs.set(leg.legId, leg);
      return void setImmediate(() => this.end(leg, 'failed'));
    }
    const leg = this.newLeg(request.callId, request.legId, request.role, 'out', 'calling', { sipCallId: newCallId(hostPart(this.advertise)), localTag: newTag() } as Dialog);
    this.legs.set(leg.legId, leg);
    leg.ringTimer = setTimeout(() => {
      if (leg.state !== 'calling') return;
      this.cancel(leg);
      this.end(leg, 'no_answer');
    }, this.options.ringTimeoutMs);
    const accounts = this.options.accounts;
    if (request.role !== 'agent' || !accounts) return this.invite(leg, request, this.trunkTarget(request.number));
    // An agent is rung at its own phone when it has one registered (or a SIP URI of its own), else through the trunk.
    accounts.locate(request.number).then(
      (found) => this.invite(leg, request, found ? { uri: found.uri, peer: found.flow ?? peerOf(found.uri, this.options.trunk.transport), sticky: found.flow !== null } : this.trunkTarget(request.number)),
      (err: unknown) => {
        this.options.log.warn({ err: (err as Error).message, legId: leg.legId }, 'sip: locating the agent failed; rung through the trunk');
        this.invite(leg, request, this.trunkTarget(request.number));
      },
    );
  }

  private invite(leg: Leg, request: DialRequest, target: { uri: string; peer: Peer | null; sticky?: boolean }) {
    if (leg.state !== 'calling' || this.legs.get(leg.legId) !== leg || this.closed) return;
    if (!target.peer) return this.end(leg, 'failed');
    const dialog: Dialog = {
      sipCallId: leg.dialog.sipCallId,
      localTag: leg.dialog.localTag,
      remoteTag: null,
      local: `<sip:${request.from || 'ct'}@${this.options.domain}>`,
      remote: `<${target.uri}>`,
      remoteTarget: target.uri,
      routeSet: [],
      localSeq: 1,
      flow: target.peer,
      sticky: target.sticky ?? false,
    };
    leg.dialog = dialog;
    const req = inDialog(dialog, 'INVITE', this.contact, '', 1);
    const branch = newBranch();
    leg.invite = { req, branch, to: target.peer };
    this.keeper?.keep(leg.legId, dialog, branch);
    this.transactions.request(req, target.peer, { onResponse: (res) => this.onInviteResponse(leg, res), onTimeout: () => this.end(leg, 'no_answer') }, branch);
  }

  acceptInbound(callId: string, legId: string, _from: string): void {
    if (this.closed || this.legs.has(legId)) return;
    const leg = this.pendingInbound.get(callId);
    this.pendingInbound.delete(callId);
    if (!leg) {
      // No caller waits for this call here (a restart lost the INVITE): its leg ends at once.
      const gone = this.newLeg(callId, legId, 'customer', 'in', 'ending', { sipCallId: '', localTag: '' } as Dialog);
      this.legs.set(legId, gone);
      return void setImmediate(() => this.end(gone, 'failed'));
    }
    leg.legId = legId;
    this.legs.set(legId, leg);
    const offer = leg.offer!;
    if (offer.cancelled) return void setImmediate(() => this.end(leg, 'hangup'));
    if (offer.blocked) return; // rejected (603) when the platform hangs it up
    leg.sentSdp = holdSdp(leg.origin, leg.remoteSdp);
    offer.tx.respond(this.response(offer.tx, 200, 'OK', [['contact', this.contact], ['allow', ALLOW], ['content-type', 'application/sdp']], leg.sentSdp, leg.dialog.localTag));
    leg.offer = undefined;
    leg.state = 'up';
    this.keeper?.keep(legId, leg.dialog);
  }

  hangup(legId: string): void {
    const leg = this.legs.get(legId);
    if (!leg || leg.state === 'ending') return;
    if (leg.state === 'calling') this.cancel(leg);
    else if (leg.state === 'offered' && leg.offer) leg.offer.tx.respond(this.response(leg.offer.tx, 603, 'Decline', [], '', leg.dialog.localTag));
    else if (leg.state === 'up') this.sendInDialog(leg, 'BYE');
    leg.state = 'ending';
    // As on every switch, the signal follows the order, not within it.
    setImmediate(() => this.end(leg, 'hangup'));
  }

  remoteHangup(legId: string): void {
    // The operator's simulated hangups are refused on SIP (CONTRACT 16); a real party sends its own BYE.
    this.hangup(legId);
  }

  bridge(_callId: string, legA: string, legB: string, _options?: { record: boolean }): void {
    const a = this.legs.get(legA);
    const b = this.legs.get(legB);
    if (!a || !b || a.state !== 'up' || b.state !== 'up') return;
    a.bridgedWith = b.legId;
    b.bridgedWith = a.legId;
    // A gets B's description; B then gets A's answer to it.
    reinvite(this, a, b.remoteSdp, () => reinvite(this, b, a.remoteSdp));
  }

  monitor(): void {
    // No media server: monitoring is refused before it reaches the switch (CONTRACT 16).
  }

  async close(): Promise<void> {
    if (this.closed) return;
    if (!this.transportOrNull) {
      this.closed = true;
      this.legs.clear();
      return;
    }
    // Parties are told: nothing keeps ringing or stays connected to a platform that is gone.
    for (const leg of this.legs.values()) {
      if (leg.state === 'calling') this.cancel(leg);
      else if (leg.state === 'up') this.sendInDialog(leg, 'BYE');
      else if (leg.state === 'offered' && leg.offer) leg.offer.tx.respond(this.response(leg.offer.tx, 503, 'Service Unavailable'));
      if (leg.ringTimer) clearTimeout(leg.ringTimer);
      this.keeper?.forget(leg.legId);
    }
    await this.keeper?.flush();
    for (const leg of this.pendingInbound.values()) leg.offer?.tx.respond(this.response(leg.offer.tx, 503, 'Service Unavailable'));
    this.closed = true;
    this.legs.clear();
    this.dialogs.clear();
    this.pendingInbound.clear();
    this.emitter.removeAllListeners();
    this.transactionsOrNull?.close();
    await this.transportOrNull?.close();
  }

  // --- for inbound.ts and reinvite.ts ---------------------------------------------------------
  get isClosed(): boolean {
    return this.closed;
  }

  newLeg(callId: string, legId: string, role: LegRole, direction: Leg['direction'], state: Leg['state'], dialog: Dialog): Leg {
    const leg: Leg = {
      callId, legId, role, direction, state, dialog,
      got1xx: false, cancelPending: false, ringSignalled: direction === 'in', ringTimer: null,
      origin: { sessionId: String(Math.floor(Math.random() * 1e9)), version: 1, address: this.advertise },
      remoteSdp: null, sentSdp: null, bridgedWith: null, reinviting: false,
    };
    if (dialog.sipCallId) this.dialogs.set(dialogKey(dialog.sipCallId, dialog.localTag), leg);
    return leg;
  }

  /** A response to a server transaction's request, with RFC 3581's received/rport and, on a dialog's, our To tag. */
  response(tx: ServerTx, status: number, reason: string, extra: Array<[string, string]> = [], body = '', toTag?: string): SipResponse {
    const res = responseTo(tx.request, status, reason, extra, body, tx.source);
    if (toTag && status > 100) res.headers = res.headers.map(([n, v]) => (n === 'to' && !/;\s*tag=/i.test(v) ? [n, `${v};tag=${toTag}`] : [n, v]));
    return res;
  }

  end(leg: Leg, reason: EndReason): void {
    if (leg.ringTimer) clearTimeout(leg.ringTimer);
    leg.ringTimer = null;
    this.dialogs.delete(dialogKey(leg.dialog.sipCallId, leg.dialog.localTag));
    this.keeper?.forget(leg.legId);
    if (this.legs.get(leg.legId) !== leg) return;
    this.legs.delete(leg.legId);
    if (leg.state !== 'ending') leg.state = 'ending';
    // CONTRACT 16: a leg that ends without any 1xx still has its Ring event first.
    if (!leg.ringSignalled) {
      leg.ringSignalled = true;
      this.emit({ kind: 'ringing', callId: leg.callId, legId: leg.legId, time: this.now() });
    }
    this.emit({ kind: 'ended', callId: leg.callId, legId: leg.legId, time: this.now(), reason });
  }

  // --- internals ----------------------------------------------------------------------------

  private trunkTarget(number: string): { uri: string; peer: Peer } {
    const t = this.options.trunk;
    return { uri: `sip:${number}@${hostPart(t.host)}:${t.port}${t.transport === 'tcp' ? ';transport=tcp' : ''}`, peer: t };
  }

  private onInviteResponse(leg: Leg, res: SipResponse) {
    if (res.status < 200) {
      if (res.status === 100) return;
      leg.got1xx = true;
      if (leg.cancelPending) return this.cancel(leg);
      if (leg.state === 'calling' && !leg.ringSignalled && /;\s*tag=/i.test(header(res, 'to') ?? '')) {
        leg.ringSignalled = true;
        this.emit({ kind: 'ringing', callId: leg.callId, legId: leg.legId, time: this.now() });
      }
      return;
    }
    if (res.status < 300) {
      learnFromResponse(leg.dialog, res);
      if (isSdp(res.body)) leg.remoteSdp = res.body;
      leg.sentSdp = holdSdp(leg.origin, leg.remoteSdp);
      this.ack(leg, res, leg.sentSdp);
      if (leg.state !== 'calling' || this.legs.get(leg.legId) !== leg) {
        // Answered after it was cancelled or hung up: the answer is acknowledged and ended.
        return void this.sendInDialog(leg, 'BYE');
      }
      leg.state = 'up';
      this.keeper?.keep(leg.legId, leg.dialog);
      if (leg.ringTimer) clearTimeout(leg.ringTimer);
      if (!leg.ringSignalled) {
        leg.ringSignalled = true;
        this.emit({ kind: 'ringing', callId: leg.callId, legId: leg.legId, time: this.now() });
      }
      this.emit({ kind: 'answered', callId: leg.callId, legId: leg.legId, time: this.now() });
      return;
    }
    if (leg.state !== 'calling') return;
    this.end(leg, res.status === 486 || res.status === 600 || res.status === 603 ? 'busy' : 'no_answer');
  }

  ack(leg: Leg, res: SipResponse, body: string) {
    const seq = Number((header(res, 'cseq') ?? '1').split(/\s+/)[0]);
    const to = destination(leg.dialog);
    const req = inDialog(leg.dialog, 'ACK', this.contact, body, seq);
    // The ACK of a 2xx is a transaction of its own: a new branch, no retransmission (RFC 3261 13.2.2.4).
    req.headers.unshift(['via', `SIP/2.0/${to.transport.toUpperCase()} ${hostPart(this.advertise)}:${this.port};branch=${newBranch()};rport`]);
    this.transport.send(req, to);
  }

  /** Our 200 to a caller's INVITE never got its ACK: the caller is gone; its leg ends with BYE. */
  private noAck(invite: SipRequest) {
    const toTag = /;\s*tag=([^;>\s]+)/.exec(header(invite, 'to') ?? '')?.[1];
    for (const leg of this.legs.values()) {
      if (leg.direction !== 'in' || leg.state !== 'up' || leg.dialog.sipCallId !== header(invite, 'call-id') || (toTag && toTag !== leg.dialog.localTag)) continue;
      this.sendInDialog(leg, 'BYE');
      return this.end(leg, 'hangup');
    }
  }

  /** A retransmitted 2xx: its ACK again (RFC 3261 13.2.2.4); one no leg knows (a killed worker's INVITE answered) is ACKed and ended. */
  private reAck(res: SipResponse, source: Peer) {
    for (const leg of this.dialogs.values()) {
      if (leg.dialog.sipCallId === header(res, 'call-id') && leg.direction === 'out') return this.ack(leg, res, leg.sentSdp ?? '');
    }
    if (this.closed) return;
    // Its retransmissions are ACKed again, but ended once.
    const id = `${header(res, 'call-id')}|${header(res, 'to')}`;
    const first = !this.strays.has(id);
    if (first) {
      this.strays.add(id);
      setTimeout(() => this.strays.delete(id), 64 * (this.options.timers ?? DEFAULT_TIMERS).t1).unref();
    }
    endStrayAnswer(res, source, this.transport, this.transactions, this.advertise, this.contact, first);
  }

  /** CANCEL of a ringing INVITE: only after a provisional response (RFC 3261 9.1), else once one comes. */
  private cancel(leg: Leg) {
    if (!leg.invite) return;
    if (!leg.got1xx) return void (leg.cancelPending = true);
    leg.cancelPending = false;
    const inv = leg.invite.req;
    const headers = inv.headers.filter(([n]) => n === 'from' || n === 'to' || n === 'call-id' || n === 'route' || n === 'max-forwards');
    headers.push(['cseq', `${(header(inv, 'cseq') ?? '1').split(/\s+/)[0]} CANCEL`]);
    this.transactions.request({ kind: 'request', method: 'CANCEL', uri: inv.uri, headers, body: '' }, leg.invite.to, { onResponse: () => undefined, onTimeout: () => undefined }, leg.invite.branch);
  }

  sendInDialog(leg: Leg, method: string, body = '', onResponse?: (res: SipResponse) => void, onTimeout?: () => void) {
    this.transactions.request(inDialog(leg.dialog, method, this.contact, body), destination(leg.dialog), {
      onResponse: onResponse ?? (() => undefined),
      onTimeout: onTimeout ?? (() => undefined),
    });
  }

  badRequest(partial: SipRequest, reason: string, source: Peer) {
    if (partial.method === 'ACK' || this.closed || !this.transportOrNull) return;
    try {
      this.transport.send(responseTo(partial, 400, `Bad Request (${reason})`, [], '', source), source);
    } catch {
      // Not answerable: dropped.
    }
  }

  private emit(signal: SwitchSignal) {
    if (!this.closed) this.emitter.emit('signal', signal);
  }
}
