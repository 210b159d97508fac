/**
 * Read models of calls: `calls` (one summary per call), `call-stats` (calls begun per service and
 * day), `in-ivr` and `queued-callers` (live dashboard), `metering` (inbound, outbound, spam).
 */
import type { RecordedEvent } from '../gateways/event-store/port.js';
import type { CallStartedData } from '../commands/call/call.js';
import type { CallEndedData, LegEventData } from '../domain/call-events.js';
import type { Projection } from './projection.js';

/** Calls begun on one day in the service's timezone. */
export interface CallStatsDoc extends Record<string, unknown> {
  totalCalls: number;
  ibCalls: number;
  obCalls: number;
}

/** A caller waiting in a queue. */
export interface QueuedCallerDoc extends Record<string, unknown> {
  svcId: number;
  queueId: number;
  number: string;
  xnid: string;
  since: number;
}

export const callStatsKey = (svcId: number, day: string) => `${svcId}-${day}`;

export interface CallDoc extends Record<string, unknown> {
  xnid: string;
  svcId: number;
  direction: 'Inbound' | 'Outbound';
  customerNumber: string;
  did: string;
  data: string;
  timezone: string;
  requestedAt: number;
  startTime: number | null;
  endTime: number | null;
  durationS: number;
  disposition: 'answered' | 'missed' | null;
  agentId: number | null;
  agentName: string | null;
  recording: boolean;
  ended: boolean;
}

const xnidOf = (e: RecordedEvent) => (e.data as { xnid?: string }).xnid;

export const callsProjection: Projection<CallDoc> = {
  name: 'calls',
  keys: (e) => (e.streamId.startsWith('call-') && xnidOf(e) ? [xnidOf(e)!] : []),
  evolve(doc, e) {
    if (e.type === 'CallStarted') {
      const d = e.data as CallStartedData;
      return {
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
        return doc.startTime === null ? { ...doc, startTime: (e.data as LegEventData).time } : doc;
      case 'CallBridged': {
        const d = e.data as { agentId: number; agentName: string };
        return { ...doc, agentId: d.agentId, agentName: d.agentName };
      }
      case 'CallEnded': {
        const d = e.data as CallEndedData;
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
      default:
        return doc;
    }
  },
};

const started = (e: RecordedEvent) => (e.type === 'CallStarted' ? (e.data as CallStartedData) : null);

export const callStatsProjection: Projection<CallStatsDoc> = {
  name: 'call-stats',
  keys: (e) => {
    const d = started(e);
    return d && !d.blocked ? [callStatsKey(d.svcId, d.day)] : [];
  },
  evolve(doc, e) {
    const d = e.data as CallStartedData;
    const s = doc ?? { totalCalls: 0, ibCalls: 0, obCalls: 0 };
    return {
      totalCalls: s.totalCalls + 1,
      ibCalls: s.ibCalls + (d.direction === 'Inbound' ? 1 : 0),
      obCalls: s.obCalls + (d.direction === 'Outbound' ? 1 : 0),
    };
  },
};

export const inIvrProjection: Projection = {
  name: 'in-ivr',
  keys: (e) => {
    if (e.type === 'CallStarted') {
      const d = e.data as CallStartedData;
      return d.direction === 'Inbound' && !d.blocked ? [d.xnid] : [];
    }
    // The IVR is done with a caller once the caller waits in a queue, is offered to an agent, or is gone.
    return e.type === 'CallQueued' || e.type === 'AgentRing' || e.type === 'CallBridged' || e.type === 'CallEnded' ? [xnidOf(e)!] : [];
  },
  evolve: (_doc, e) => (e.type === 'CallStarted' ? { svcId: (e.data as CallStartedData).svcId } : null),
};

export const queuedCallersProjection: Projection<QueuedCallerDoc> = {
  name: 'queued-callers',
  keys: (e) => (e.type === 'CallQueued' || e.type === 'CallDequeued' || e.type === 'CallEnded' ? [xnidOf(e)!] : []),
  evolve(_doc, e) {
    if (e.type !== 'CallQueued') return null;
    const d = e.data as { svcId: number; queueId: number; number: string; xnid: string; time: number };
    return { svcId: d.svcId, queueId: d.queueId, number: d.number, xnid: d.xnid, since: d.time };
  },
};

export interface MeteringDoc extends Record<string, unknown> {
  inbound: number;
  outbound: number;
  spam: number;
}

export const meteringProjection: Projection<MeteringDoc> = {
  name: 'metering',
  keys: (e) => {
    const d = started(e);
    return d ? [String(d.svcId)] : [];
  },
  evolve(doc, e) {
    const d = e.data as CallStartedData;
    const m = doc ?? { inbound: 0, outbound: 0, spam: 0 };
    if (d.blocked) return { ...m, spam: m.spam + 1 };
    return d.direction === 'Inbound' ? { ...m, inbound: m.inbound + 1 } : { ...m, outbound: m.outbound + 1 };
  },
};
