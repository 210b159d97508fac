/** One leg of a call on the SIP switch: its dialog and where its offer/answer stands. */
import type { LegRole } from '../port.js';
import type { SipRequest } from './message.js';
import type { Peer } from './transport.js';
import type { ServerTx } from './transactions.js';
import type { Dialog } from './dialog.js';
import type { Origin } from './sdp.js';

export interface Leg {
  callId: string;
  legId: string;
  role: LegRole;
  direction: 'out' | 'in';
  state: 'calling' | 'offered' | 'up' | 'ending';
  dialog: Dialog;
  /** The INVITE that opened an outbound leg (CANCEL copies it) and its branch. */
  invite?: { req: SipRequest; branch: string; to: Peer };
  /** An inbound leg's INVITE transaction until it is answered. */
  offer?: { tx: ServerTx; blocked: boolean; cancelled: boolean };
  got1xx: boolean;
  cancelPending: boolean;
  ringSignalled: boolean;
  ringTimer: NodeJS.Timeout | null;
  origin: Origin;
  /** The last description the party sent, and the last one it got from the platform. */
  remoteSdp: string | null;
  sentSdp: string | null;
  bridgedWith: string | null;
  /** A re-INVITE of ours is outstanding (an incoming one meanwhile is glare: 491). */
  reinviting: boolean;
}
