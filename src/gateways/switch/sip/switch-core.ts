/**
 * What the inbound request handler (inbound.ts) and the re-INVITE logic (reinvite.ts) need of the SIP
 * switch. SipSwitch implements it; they import this rather than sip-switch.ts, which imports them.
 */
import type { EndReason, InboundDecision, InboundOffer, LegRole } from '../port.js';
import type { SipResponse } from './message.js';
import type { ServerTx } from './transactions.js';
import type { Dialog } from './dialog.js';
import type { Leg } from './leg.js';
import type { Registrar } from './registrar.js';

export interface SipLog {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface SwitchCore {
  readonly options: { readonly log: SipLog };
  readonly legs: Map<string, Leg>;
  /** Legs by dialog (Call-ID and our tag), for requests inside them. */
  readonly dialogs: Map<string, Leg>;
  /** Inbound INVITEs the platform accepted, by call id, until acceptInbound picks them up. */
  readonly pendingInbound: Map<string, Leg>;
  readonly inboundHandler: ((offer: InboundOffer) => Promise<InboundDecision>) | null;
  readonly registrar: Registrar | null;
  readonly contact: string;
  readonly isClosed: boolean;
  newLeg(callId: string, legId: string, role: LegRole, direction: Leg['direction'], state: Leg['state'], dialog: Dialog): Leg;
  end(leg: Leg, reason: EndReason): void;
  ack(leg: Leg, res: SipResponse, body: string): void;
  response(tx: ServerTx, status: number, reason: string, extra?: Array<[string, string]>, body?: string, toTag?: string): SipResponse;
  sendInDialog(leg: Leg, method: string, body?: string, onResponse?: (res: SipResponse) => void, onTimeout?: () => void): void;
}
