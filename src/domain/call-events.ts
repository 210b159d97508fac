/**
 * The call events other parts of the platform consume: the six leg events (the socket's event kinds)
 * and CallEnded, which carries the finished call's webhook record. The call aggregate appends them to
 * `call-<xnid>`; the socket, subscriber deliveries and webhook deliveries only read them.
 */
export const LEG_EVENT_TYPES = ['CustomerRing', 'CustomerUp', 'CustomerHangup', 'AgentRing', 'AgentUp', 'AgentHangup'] as const;
export type LegEventType = (typeof LEG_EVENT_TYPES)[number];

export type CallDirection = 'Inbound' | 'Outbound';

/** Payload of every leg event: everything the socket call event needs, plus the service it belongs to. */
export interface LegEventData {
  xnid: string;
  svcId: number;
  /** The agent the event concerns; on customer events, the agent on the call once there is one. */
  agentId: number | null;
  /** Customer number. */
  number: string;
  /** Epoch ms of the leg change. */
  time: number;
  /** Caller's IVR digits on inbound calls, "" otherwise. */
  data: string;
  direction: CallDirection;
}

/** The spec's webhook record, field names as the receiver sees them. */
export interface WebhookRecord {
  callid: string;
  'call-duration': string;
  'agent-number': string;
  'customer-number': string;
  'end-time': string;
  'start-time': string;
  'recording-url'?: string;
  'call-type': 'incoming' | 'outgoing';
  'virtual-number': string;
  disposition: 'answered' | 'missed';
  /** The caller asked for a callback while waiting (CONTRACT section 17). */
  callback?: true;
  /** This call is the callback of that call. */
  'callback-of'?: string;
}

export interface CallEndedData {
  xnid: string;
  svcId: number;
  direction: CallDirection;
  disposition: 'answered' | 'missed';
  startTime: number;
  endTime: number;
  durationS: number;
  agentId: number | null;
  agentNumber: string;
  customerNumber: string;
  recordingUrl: string | null;
  /** null when no webhook is owed (a blocked caller's call). */
  webhook: WebhookRecord | null;
  /**
   * How the call started (its CallStarted's `source`: a schedule, a campaign contact, else null), so
   * that whoever follows call ends need not read the call back. Absent on calls ended before it was
   * added: read the CallStarted then.
   */
  source?: Record<string, unknown> | null;
}

/** The socket call event of the spec, built from a stored leg event. */
export interface SocketCallEvent {
  xnid: string;
  event: LegEventType;
  agent: string | null;
  number: string;
  time: number;
  data: string;
  svc: string;
  type: CallDirection;
}

/** A leg event (any of the six kinds), as far as the socket and the subscribers see it. */
export interface LegEvent {
  type: LegEventType;
  data: LegEventData;
}

/** Whether an event is a leg event; narrows it (and its data) when it is. */
export function isLegEvent<E extends { type: string }>(e: E): e is E & LegEvent {
  return (LEG_EVENT_TYPES as readonly string[]).includes(e.type);
}

export function toSocketEvent(e: LegEvent): SocketCallEvent {
  const d = e.data;
  return {
    xnid: d.xnid,
    event: e.type,
    agent: d.agentId === null || d.agentId === undefined ? null : String(d.agentId),
    number: d.number,
    time: d.time,
    data: d.data ?? '',
    svc: String(d.svcId),
    type: d.direction,
  };
}

/** Bit of a leg event kind in a subscriber's six-digit event mask (CONTRACT section 7). */
export function maskSelects(mask: string, type: LegEventType): boolean {
  const digits = mask.padStart(6, '0');
  return digits[LEG_EVENT_TYPES.indexOf(type)] === '1';
}
