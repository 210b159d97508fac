/**
 * Read model `call-outcomes`: per call, what the wallboard's "today" counters need — the day it
 * began (service timezone), its direction, when an inbound caller entered the queue (the IVR's
 * `CustomerUp`, CONTRACT section 12), when an agent first answered, and its disposition. Found by
 * (`svcId`, `day`); the query sums them.
 */
import type { CallStartedData } from '../commands/call/call.js';
import type { CallEndedData } from '../domain/call-events.js';
import { projection, type Projection } from './projection.js';

export interface CallOutcomeDoc extends Pick<CallStartedData, 'svcId' | 'day' | 'direction'>, Record<string, unknown> {
  /** Epoch ms an inbound caller entered the queue; null for outbound calls and until then. */
  queuedAt: number | null;
  /** Epoch ms an agent first answered; null until then. */
  answeredAt: number | null;
  disposition: CallEndedData['disposition'] | null;
  /** The queue an inbound caller entered (CONTRACT section 17); absent when none. */
  queueId?: number;
}

export const callOutcomesProjection: Projection<CallOutcomeDoc> = projection({
  name: 'call-outcomes',
  canHandle: ['CallStarted', 'CustomerUp', 'AgentUp', 'CallEnded'],
  keys(e) {
    if (e.type === 'CallStarted' && e.data.blocked) return [];
    return e.data.xnid ? [e.data.xnid] : [];
  },
  evolve(doc, e) {
    if (e.type === 'CallStarted') {
      const d = e.data;
      return { svcId: d.svcId, day: d.day, direction: d.direction, queuedAt: null, answeredAt: null, disposition: null, ...(typeof d.queueId === 'number' ? { queueId: d.queueId } : {}) };
    }
    // Blocked callers' calls (never started here) stay out.
    if (!doc) return doc;
    switch (e.type) {
      case 'CustomerUp':
        return doc.direction === 'Inbound' && doc.queuedAt === null ? { ...doc, queuedAt: e.data.time } : doc;
      case 'AgentUp':
        return doc.answeredAt === null ? { ...doc, answeredAt: e.data.time } : doc;
      case 'CallEnded':
        return { ...doc, disposition: e.data.disposition };
    }
  },
});

export interface TodayCounters {
  answered: number;
  missed: number;
  /** Percentage (one decimal) of inbound callers answered within `slSeconds` of entering the queue; null when none is decided yet. */
  serviceLevel: number | null;
}

/**
 * Sums a day's outcomes. A queued caller counts toward the service level once decided: answered
 * (within the target or not), gone, or waiting longer than the target.
 */
export function todayCounters(docs: CallOutcomeDoc[], now: number, slSeconds = 20): TodayCounters {
  let answered = 0;
  let missed = 0;
  let decided = 0;
  let met = 0;
  const target = slSeconds * 1000;
  for (const d of docs) {
    if (d.disposition === 'answered') answered++;
    else if (d.disposition === 'missed') missed++;
    if (d.queuedAt === null) continue;
    if (d.answeredAt !== null) {
      decided++;
      if (d.answeredAt - d.queuedAt <= target) met++;
    } else if (d.disposition !== null || now - d.queuedAt > target) {
      decided++;
    }
  }
  return { answered, missed, serviceLevel: decided === 0 ? null : Math.round((1000 * met) / decided) / 10 };
}
