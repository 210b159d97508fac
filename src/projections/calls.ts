/**
 * Read models of calls: `calls` (one summary per call), `call-stats` (calls begun per service and
 * day), `in-ivr` and `queued-callers` (live dashboard), `metering` (inbound, outbound, spam).
 */
import type { CallEvent, CallStartedData, CallbackPlace } from '../commands/call/call.js';
import type { CallEndedData } from '../domain/call-events.js';
import { projection, type Projection } from './projection.js';

/** Calls begun on one day in the service's timezone. */
export interface CallStatsDoc extends Record<string, unknown> {
  totalCalls: number;
  ibCalls: number;
  obCalls: number;
}

type CallQueuedData = Extract<CallEvent, { type: 'CallQueued' }>['data'];

/** A caller waiting in a queue. */
export interface QueuedCallerDoc extends Pick<CallQueuedData, 'svcId' | 'queueId' | 'number' | 'xnid' | 'priority' | 'outbound'>, Record<string, unknown> {
  since: number;
}

export const callStatsKey = (svcId: number, day: string) => `${svcId}-${day}`;

type Nullable<T> = { [K in keyof T]: T[K] | null };

/** One call: as started, then who took it and how it ended. */
export interface CallDoc
  extends Pick<CallStartedData, 'xnid' | 'svcId' | 'direction' | 'customerNumber' | 'did' | 'data' | 'timezone'>,
    Nullable<Pick<CallEndedData, 'startTime' | 'endTime' | 'disposition' | 'agentId'>>,
    Pick<CallEndedData, 'durationS'>,
    Record<string, unknown> {
  requestedAt: number;
  agentName: string | null;
  recording: boolean;
  ended: boolean;
  /** CONTRACT section 17: the caller asked for a callback / this call is the callback of that one. */
  callback?: true;
  callbackOf?: string;
}

export const callsProjection: Projection<CallDoc> = projection({
  name: 'calls',
  // The other call events change nothing of the summary.
  canHandle: ['CallStarted', 'CustomerRing', 'AgentRing', 'CallBridged', 'CallbackRequested', 'CallEnded'],
  keys: (e) => (e.streamId.startsWith('call-') && e.data.xnid ? [e.data.xnid] : []),
  evolve(doc, e) {
    if (e.type === 'CallStarted') {
      const d = e.data;
      const callbackOf = d.source?.callbackOf;
      return {
        ...(typeof callbackOf === 'string' ? { callbackOf } : {}),
        xnid: d.xnid,
        svcId: d.svcId,
        direction: d.direction,
        customerNumber: d.customerNumber,
        did: d.did,
        data: d.data,
        timezone: d.timezone,
        requestedAt: d.time,
        startTime: null,
        endTime: null,
        durationS: 0,
        disposition: null,
        agentId: null,
        agentName: null,
        recording: false,
        ended: false,
      };
    }
    if (!doc) return doc;
    switch (e.type) {
      case 'CustomerRing':
      case 'AgentRing':
        return doc.startTime === null ? { ...doc, startTime: e.data.time } : doc;
      case 'CallBridged':
        return { ...doc, agentId: e.data.agentId, agentName: e.data.agentName };
      case 'CallbackRequested':
        return { ...doc, callback: true };
      case 'CallEnded': {
        const d = e.data;
        return {
          ...doc,
          startTime: d.startTime,
          endTime: d.endTime,
          durationS: d.durationS,
          disposition: d.disposition,
          agentId: doc.agentId ?? d.agentId,
          recording: d.recordingUrl !== null,
          ended: true,
        };
      }
    }
  },
});

export const callStatsProjection: Projection<CallStatsDoc> = projection({
  name: 'call-stats',
  canHandle: ['CallStarted'],
  keys: (e) => (e.data.blocked ? [] : [callStatsKey(e.data.svcId, e.data.day)]),
  evolve(doc, e) {
    const d = e.data;
    const s = doc ?? { totalCalls: 0, ibCalls: 0, obCalls: 0 };
    return {
      totalCalls: s.totalCalls + 1,
      ibCalls: s.ibCalls + (d.direction === 'Inbound' ? 1 : 0),
      obCalls: s.obCalls + (d.direction === 'Outbound' ? 1 : 0),
    };
  },
});

/** An inbound caller in the IVR. */
export interface InIvrDoc extends Pick<CallStartedData, 'svcId'>, Record<string, unknown> {}

export const inIvrProjection: Projection<InIvrDoc> = projection({
  name: 'in-ivr',
  // The IVR is done with a caller once the caller waits in a queue, is offered to an agent, or is gone.
  canHandle: ['CallStarted', 'CallQueued', 'AgentRing', 'CallBridged', 'CallEnded'],
  keys: (e) => (e.type !== 'CallStarted' || (e.data.direction === 'Inbound' && !e.data.blocked) ? [e.data.xnid] : []),
  evolve: (_doc, e) => (e.type === 'CallStarted' ? { svcId: e.data.svcId } : null),
});

export const queuedCallersProjection: Projection<QueuedCallerDoc> = projection({
  name: 'queued-callers',
  canHandle: ['CallQueued', 'CallDequeued', 'CallEnded'],
  keys: (e) => [e.data.xnid],
  evolve(_doc, e) {
    if (e.type !== 'CallQueued') return null;
    const d = e.data;
    // Routing fields only when set: documents of callers queued before them stay as they were.
    return { svcId: d.svcId, queueId: d.queueId, number: d.number, xnid: d.xnid, since: d.time, ...(d.priority ? { priority: d.priority } : {}), ...(d.outbound ? { outbound: d.outbound } : {}) };
  },
});

export interface MeteringDoc extends Record<string, unknown> {
  inbound: number;
  outbound: number;
  spam: number;
}

export const meteringProjection: Projection<MeteringDoc> = projection({
  name: 'metering',
  canHandle: ['CallStarted'],
  keys: (e) => [String(e.data.svcId)],
  evolve(doc, e) {
    const d = e.data;
    const m = doc ?? { inbound: 0, outbound: 0, spam: 0 };
    if (d.blocked) return { ...m, spam: m.spam + 1 };
    return d.direction === 'Inbound' ? { ...m, inbound: m.inbound + 1 } : { ...m, outbound: m.outbound + 1 };
  },
});

/** A caller's kept place in a queue (CONTRACT section 17), from the request until its callback is placed. */
export interface QueueCallbackDoc extends CallbackPlace, Record<string, unknown> {
  svcId: number;
  /** The call that asked for it. */
  xnid: string;
  time: number;
}

export const queueCallbacksProjection: Projection<QueueCallbackDoc> = projection({
  name: 'queue-callbacks',
  // The callback call's id is the callback's: its start takes the place out of the queue.
  canHandle: ['CallbackRequested', 'CallStarted'],
  keys: (e) => (e.type === 'CallbackRequested' ? [e.data.callbackId] : typeof e.data.source?.callbackOf === 'string' ? [e.data.xnid] : []),
  evolve: (_doc, e) => (e.type === 'CallbackRequested' ? { ...e.data } : null),
});
