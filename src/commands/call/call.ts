/**
 * The call aggregate (`call-<xnid>`): one call's legs (ringing, up, down), its bridge to agents,
 * queueing, the requests made to it (hang up, transfer, add a leg, monitor) and its end.
 * The decider keeps the leg events in a valid order: a leg rings before it answers, hangs up once,
 * and nothing happens after CallEnded.
 */
import type { Decider, DomainEvent } from '../decider.js';
import type { CallDirection, CallEndedData, LegEventData, LegEventType, WebhookRecord } from '../../domain/call-events.js';
import { conflict } from '../../domain/errors.js';
import { webhookTime } from '../../domain/time.js';

export type LegRole = 'customer' | 'agent' | 'monitor';
/** How a monitor leg joins: listens (spy), talks to the agent (whisper), talks to both parties (barge). */
export type MonitorMode = 'spy' | 'whisper' | 'barge';
export type CallOrigin = 'api' | 'inbound' | 'schedule' | 'dialer' | 'click2call';

export interface CallStartedData {
  xnid: string;
  svcId: number;
  direction: CallDirection;
  origin: CallOrigin;
  customerNumber: string;
  /** DID called (inbound) or the service's first DID (outbound); "" when the service has none. */
  did: string;
  /** IVR digits of an inbound caller, "" otherwise. */
  data: string;
  recording: boolean;
  /** The service's timezone, so projections format and bucket times without lookups. */
  timezone: string;
  /** Day the call began on in that timezone (`YYYY-MM-DD`): the dashboard's "since midnight". */
  day: string;
  agentFirst: boolean;
  namedAgentId: number | null;
  skillId: number | null;
  msgToAgent: string;
  countryCode: string;
  userId: number | null;
  /** Caller on the service's blocklist: rejected, counted as spam. */
  blocked: boolean;
  /** Dialer calls put the agent in wrap-up afterwards. */
  wrapUp: boolean;
  /** Inbound: the queue the IVR digits chose (CONTRACT section 17), null when the service has none; absent on calls from before. */
  queueId?: number | null;
  /** Inbound: the caller's customer priority, when not 0. */
  priority?: number;
  /** Set by workers that place calls for a reason of their own (schedule id, campaign contact). */
  source: Record<string, unknown> | null;
  time: number;
}

type Base = { xnid: string; svcId: number; time: number };
export type LegData = LegEventData & { legId: string };

export type CallEvent =
  | DomainEvent<'CallStarted', CallStartedData>
  | DomainEvent<LegEventType, LegData>
  | DomainEvent<'CallMonitorJoined', Base & { legId: string; number: string; mode: MonitorMode }>
  | DomainEvent<'CallMonitorLeft', Base & { legId: string }>
  | DomainEvent<'CallQueued', Base & { queueId: number; number: string; priority?: number; outbound?: true }>
  | DomainEvent<'CallDequeued', Base>
  /** The waiting caller asked to be called back (CONTRACT section 17): the call ends, its place in the queue is kept by `callbackId`. */
  | DomainEvent<'CallbackRequested', Base & CallbackPlace>
  | DomainEvent<'CallBridged', Base & { agentId: number; agentName: string; agentNumber: string }>
  | DomainEvent<'CallRejected', Base & { reason: 'blocked' }>
  | DomainEvent<'CallHangupRequested', Base & { userId: number | null }>
  | DomainEvent<'CallTransferRequested', Base & { fromAgentId: number; toAgentId: number; mode: 'BLIND' | 'ATTENDED' }>
  | DomainEvent<'CallLegAddRequested', Base & { byAgentId: number; toAgentId: number }>
  | DomainEvent<'CallMonitorRequested', Base & { number: string; mode: MonitorMode }>
  | DomainEvent<'SimulatedHangupRequested', Base & { party: 'customer' | 'agent' }>
  | DomainEvent<'CallEnded', CallEndedData>;

/** A caller's place in a queue, kept for a callback: enough to rank it as the caller was ranked. */
export interface CallbackPlace {
  /** Also the id the callback call will have. */
  callbackId: string;
  queueId: number;
  number: string;
  /** The caller's customer priority (0 for an outbound caller). */
  priority: number;
  /** When the caller joined the queue. */
  queuedAt: number;
  inbound: boolean;
  /** The skill an outbound call asked for. */
  skillId: number | null;
}

export interface Leg {
  role: LegRole;
  agentId: number | null;
  number: string;
  phase: 'ringing' | 'up' | 'down';
}

export interface CallState {
  started: CallStartedData | null;
  legs: Record<string, Leg>;
  /** The agent on the call: the last agent whose leg answered. */
  agentId: number | null;
  bridged: { agentId: number; agentName: string; agentNumber: string }[];
  queuedAt: number | null;
  /** The queue the caller waits in and its customer priority (from CallQueued). */
  queueId: number | null;
  queuedPriority: number;
  /** Set once the caller asked for a callback. */
  callbackId: string | null;
  firstRingAt: number | null;
  lastDownAt: number | null;
  hangupRequested: boolean;
  ended: boolean;
}

export type CallCommand =
  | { type: 'Start'; data: CallStartedData }
  | { type: 'Ring'; legId: string; role: LegRole; agentId: number | null; number: string; time: number }
  | { type: 'Answer'; legId: string; time: number; mode?: MonitorMode }
  | { type: 'Down'; legId: string; time: number }
  | { type: 'Bridge'; agentId: number; agentName: string; agentNumber: string; time: number }
  | { type: 'Queue'; queueId: number; time: number; priority?: number; outbound?: true }
  | { type: 'Dequeue'; time: number }
  | { type: 'RequestCallback'; callbackId: string; time: number }
  | { type: 'Reject'; time: number }
  | { type: 'RequestHangup'; userId: number | null; time: number }
  | { type: 'RequestTransfer'; fromAgentId: number; toAgentId: number; mode: 'BLIND' | 'ATTENDED'; time: number }
  | { type: 'RequestAddLeg'; byAgentId: number; toAgentId: number; time: number }
  | { type: 'RequestMonitor'; number: string; mode: MonitorMode; time: number }
  | { type: 'RequestSimulatedHangup'; party: 'customer' | 'agent'; time: number }
  | { type: 'End'; time: number; recordingUrl: string | null };

export const initialCallState = (): CallState => ({
  started: null,
  legs: {},
  agentId: null,
  bridged: [],
  queuedAt: null,
  queueId: null,
  queuedPriority: 0,
  callbackId: null,
  firstRingAt: null,
  lastDownAt: null,
  hangupRequested: false,
  ended: false,
});

const LEG_TYPES: Record<'customer' | 'agent', [LegEventType, LegEventType, LegEventType]> = {
  customer: ['CustomerRing', 'CustomerUp', 'CustomerHangup'],
  agent: ['AgentRing', 'AgentUp', 'AgentHangup'],
};

export const activeLegs = (s: CallState, role?: LegRole) =>
  Object.entries(s.legs).filter(([, l]) => l.phase !== 'down' && (role === undefined || l.role === role));

export function evolveCall(s: CallState, e: CallEvent): CallState {
  switch (e.type) {
    case 'CallStarted':
      return { ...s, started: e.data };
    case 'CustomerRing':
    case 'AgentRing':
      return {
        ...s,
        firstRingAt: s.firstRingAt ?? e.data.time,
        legs: { ...s.legs, [e.data.legId]: { role: e.type === 'AgentRing' ? 'agent' : 'customer', agentId: e.type === 'AgentRing' ? e.data.agentId : null, number: e.type === 'AgentRing' ? legNumber(e.data) : e.data.number, phase: 'ringing' } },
      };
    case 'CustomerUp':
    case 'AgentUp': {
      const leg = s.legs[e.data.legId]!;
      return {
        ...s,
        agentId: e.type === 'AgentUp' ? e.data.agentId : s.agentId,
        legs: { ...s.legs, [e.data.legId]: { ...leg, phase: 'up' } },
      };
    }
    case 'CustomerHangup':
    case 'AgentHangup': {
      const leg = s.legs[e.data.legId]!;
      return { ...s, lastDownAt: e.data.time, legs: { ...s.legs, [e.data.legId]: { ...leg, phase: 'down' } } };
    }
    case 'CallMonitorJoined':
      return { ...s, legs: { ...s.legs, [e.data.legId]: { role: 'monitor', agentId: null, number: e.data.number, phase: 'up' } } };
    case 'CallMonitorLeft': {
      const leg = s.legs[e.data.legId];
      return leg ? { ...s, legs: { ...s.legs, [e.data.legId]: { ...leg, phase: 'down' } } } : s;
    }
    case 'CallQueued':
      return { ...s, queuedAt: e.data.time, queueId: e.data.queueId, queuedPriority: e.data.priority ?? 0 };
    case 'CallbackRequested':
      return { ...s, callbackId: e.data.callbackId };
    case 'CallDequeued':
      return { ...s, queuedAt: null };
    case 'CallBridged':
      return { ...s, agentId: e.data.agentId, bridged: [...s.bridged, { agentId: e.data.agentId, agentName: e.data.agentName, agentNumber: e.data.agentNumber }] };
    case 'CallHangupRequested':
      return { ...s, hangupRequested: true };
    case 'CallEnded':
      return { ...s, ended: true, queuedAt: null };
    default:
      return s;
  }
}

/** The number an agent leg rang is kept beside the customer number in the leg event. */
const legNumber = (d: LegData & { agentNumber?: string }) => d.agentNumber ?? '';

function legEvent(s: CallState, type: LegEventType, legId: string, agentId: number | null, time: number, agentNumber?: string): CallEvent {
  const st = s.started!;
  const data: LegData & { agentNumber?: string } = {
    xnid: st.xnid,
    svcId: st.svcId,
    agentId,
    number: st.customerNumber,
    time,
    data: st.data,
    direction: st.direction,
    legId,
  };
  if (agentNumber !== undefined) data.agentNumber = agentNumber;
  return { type, data } as CallEvent;
}

function ended(s: CallState, time: number, recordingUrl: string | null): CallEndedData {
  const st = s.started!;
  const answered = s.bridged.length > 0;
  const startTime = s.firstRingAt ?? st.time;
  const endTime = Math.max(s.lastDownAt ?? time, startTime);
  const last = s.bridged[s.bridged.length - 1];
  const lastAgentLeg = Object.values(s.legs).filter((l) => l.role === 'agent').pop();
  const agentNumber = last?.agentNumber ?? lastAgentLeg?.number ?? '';
  const durationS = Math.floor((endTime - startTime) / 1000);
  const recording = answered && st.recording ? recordingUrl : null;
  const webhook: WebhookRecord | null = st.blocked
    ? null
    : {
        callid: st.xnid,
        'call-duration': String(durationS),
        'agent-number': agentNumber,
        'customer-number': st.customerNumber,
        'end-time': webhookTime(endTime, st.timezone),
        'start-time': webhookTime(startTime, st.timezone),
        ...(recording ? { 'recording-url': recording } : {}),
        'call-type': st.direction === 'Inbound' ? 'incoming' : 'outgoing',
        'virtual-number': st.did,
        disposition: answered ? 'answered' : 'missed',
        // The two calls of a callback name each other (CONTRACT section 17).
        ...(s.callbackId !== null ? { callback: true as const } : {}),
        ...(typeof st.source?.callbackOf === 'string' ? { 'callback-of': st.source.callbackOf } : {}),
      };
  return {
    xnid: st.xnid,
    svcId: st.svcId,
    direction: st.direction,
    disposition: answered ? 'answered' : 'missed',
    startTime,
    endTime,
    durationS,
    agentId: last?.agentId ?? lastAgentLeg?.agentId ?? null,
    agentNumber,
    customerNumber: st.customerNumber,
    recordingUrl: recording,
    webhook,
    source: st.source,
  };
}

function requireOpen(s: CallState) {
  if (s.ended) throw conflict(`call ${s.started?.xnid ?? ''} has ended`);
}

export const callDecider: Decider<CallCommand, CallState, CallEvent> = {
  initialState: initialCallState,
  evolve: evolveCall,
  decide(c, s) {
    if (c.type === 'Start') return s.started ? [] : [{ type: 'CallStarted', data: c.data }];
    if (!s.started) throw conflict('call not started');
    const base = { xnid: s.started.xnid, svcId: s.started.svcId, time: c.time };
    switch (c.type) {
      case 'Ring': {
        requireOpen(s);
        if (s.legs[c.legId]) return [];
        if (c.role === 'monitor') return [];
        const [ring] = LEG_TYPES[c.role];
        return [legEvent(s, ring, c.legId, c.role === 'agent' ? c.agentId : s.agentId, c.time, c.role === 'agent' ? c.number : undefined)];
      }
      case 'Answer': {
        requireOpen(s);
        const leg = s.legs[c.legId];
        if (!leg) {
          // Monitor legs have no leg events of their own; they join once answered.
          if (c.mode) return [{ type: 'CallMonitorJoined', data: { ...base, legId: c.legId, number: '', mode: c.mode } }];
          throw conflict(`leg ${c.legId} never rang`);
        }
        if (leg.phase !== 'ringing' || leg.role === 'monitor') return [];
        const [, up] = LEG_TYPES[leg.role];
        return [legEvent(s, up, c.legId, leg.role === 'agent' ? leg.agentId : s.agentId, c.time)];
      }
      case 'Down': {
        const leg = s.legs[c.legId];
        if (!leg || leg.phase === 'down' || s.ended) return [];
        if (leg.role === 'monitor') return [{ type: 'CallMonitorLeft', data: { ...base, legId: c.legId } }];
        const [, , hangup] = LEG_TYPES[leg.role];
        return [legEvent(s, hangup, c.legId, leg.role === 'agent' ? leg.agentId : s.agentId, c.time)];
      }
      case 'Bridge':
        requireOpen(s);
        // A waiting caller leaves the queue in the same append: one step, and no moment bridged yet queued.
        return [
          { type: 'CallBridged', data: { ...base, agentId: c.agentId, agentName: c.agentName, agentNumber: c.agentNumber } },
          ...(s.queuedAt !== null ? [{ type: 'CallDequeued' as const, data: base }] : []),
        ];
      case 'Queue':
        requireOpen(s);
        return s.queuedAt !== null ? [] : [{ type: 'CallQueued', data: { ...base, queueId: c.queueId, number: s.started.customerNumber, ...(c.priority ? { priority: c.priority } : {}), ...(c.outbound ? { outbound: c.outbound } : {}) } }];
      case 'RequestCallback':
        requireOpen(s);
        if (s.callbackId !== null) throw conflict(`call ${s.started.xnid} has a callback already`);
        if (s.queuedAt === null || s.hangupRequested) throw conflict(`call ${s.started.xnid} is not waiting in a queue`);
        return [
          {
            type: 'CallbackRequested',
            data: {
              ...base,
              callbackId: c.callbackId,
              queueId: s.queueId ?? 0,
              number: s.started.customerNumber,
              priority: s.queuedPriority,
              queuedAt: s.queuedAt,
              inbound: s.started.direction === 'Inbound',
              skillId: s.started.skillId,
            },
          },
        ];
      case 'Dequeue':
        return s.queuedAt === null || s.ended ? [] : [{ type: 'CallDequeued', data: base }];
      case 'Reject':
        requireOpen(s);
        return [{ type: 'CallRejected', data: { ...base, reason: 'blocked' } }];
      case 'RequestHangup':
        requireOpen(s);
        return s.hangupRequested ? [] : [{ type: 'CallHangupRequested', data: { ...base, userId: c.userId } }];
      case 'RequestTransfer':
        requireOpen(s);
        if (!activeLegs(s, 'customer').length) throw conflict('the customer is not on the call');
        if (!activeLegs(s, 'agent').some(([, l]) => l.agentId === c.fromAgentId && l.phase === 'up')) {
          throw conflict(`agent ${c.fromAgentId} is not talking on call ${s.started.xnid}`);
        }
        return [{ type: 'CallTransferRequested', data: { ...base, fromAgentId: c.fromAgentId, toAgentId: c.toAgentId, mode: c.mode } }];
      case 'RequestAddLeg':
        requireOpen(s);
        if (!activeLegs(s, 'customer').length) throw conflict('the customer is not on the call');
        return [{ type: 'CallLegAddRequested', data: { ...base, byAgentId: c.byAgentId, toAgentId: c.toAgentId } }];
      case 'RequestMonitor':
        requireOpen(s);
        return [{ type: 'CallMonitorRequested', data: { ...base, number: c.number, mode: c.mode } }];
      case 'RequestSimulatedHangup':
        requireOpen(s);
        return [{ type: 'SimulatedHangupRequested', data: { ...base, party: c.party } }];
      case 'End': {
        if (s.ended) return [];
        const events: CallEvent[] = [];
        // Legs the switch lost (a restart) are closed first, so every leg that rang also hangs up.
        for (const [legId, leg] of activeLegs(s)) {
          if (leg.role === 'monitor') events.push({ type: 'CallMonitorLeft', data: { ...base, legId } });
          else events.push(legEvent(s, LEG_TYPES[leg.role][2], legId, leg.role === 'agent' ? leg.agentId : s.agentId, c.time));
        }
        let after = s;
        for (const e of events) after = evolveCall(after, e);
        if (s.queuedAt !== null) events.push({ type: 'CallDequeued', data: base });
        events.push({ type: 'CallEnded', data: ended(after, c.time, c.recordingUrl) });
        return events;
      }
    }
  },
};
