/** A scheduled call (`schedule-<id>`): when and what to place, each attempt, and how it ended. */
import type { Decider, DomainEvent } from '../decider.js';
import type { DoNotCallReason } from '../../domain/do-not-call.js';

export interface CallScheduledData {
  id: string;
  svcId: number;
  number: string;
  runAt: number;
  maxTries: number;
  skillId: number | null;
  namedAgentId: number | null;
  countryCode: string;
  userId: number;
  time: number;
}

type Ids = { id: string; svcId: number; time: number };

export type ScheduleEvent =
  | DomainEvent<'CallScheduled', CallScheduledData>
  | DomainEvent<'ScheduledAttemptPlaced', Ids & { attempt: number; xnid: string }>
  | DomainEvent<'ScheduledCallAnswered', Ids & { attempt: number; xnid: string }>
  | DomainEvent<'ScheduledCallExhausted', Ids & { attempts: number }>
  /** Not placed (any more): the number became dnd or blocked after it was scheduled (CONTRACT section 15). */
  | DomainEvent<'ScheduledCallSkipped', Ids & { attempts: number; reason: DoNotCallReason }>;

export interface ScheduleState {
  scheduled: CallScheduledData | null;
  attempts: number;
  xnids: string[];
  done: boolean;
}

export type ScheduleCommand =
  | { type: 'Schedule'; data: CallScheduledData }
  | { type: 'PlaceAttempt'; attempt: number; xnid: string; time: number }
  | { type: 'RecordOutcome'; attempt: number; xnid: string; answered: boolean; time: number }
  | { type: 'Skip'; reason: DoNotCallReason; time: number };

export const scheduleDecider: Decider<ScheduleCommand, ScheduleState, ScheduleEvent> = {
  initialState: () => ({ scheduled: null, attempts: 0, xnids: [], done: false }),
  evolve(s, e) {
    switch (e.type) {
      case 'CallScheduled':
        return { ...s, scheduled: e.data };
      case 'ScheduledAttemptPlaced':
        return { ...s, attempts: e.data.attempt, xnids: [...s.xnids, e.data.xnid] };
      case 'ScheduledCallAnswered':
      case 'ScheduledCallExhausted':
      case 'ScheduledCallSkipped':
        return { ...s, done: true };
    }
  },
  decide(c, s) {
    if (c.type === 'Schedule') return s.scheduled ? [] : [{ type: 'CallScheduled', data: c.data }];
    if (!s.scheduled || s.done) return [];
    const ids = { id: s.scheduled.id, svcId: s.scheduled.svcId, time: c.time };
    if (c.type === 'Skip') return [{ type: 'ScheduledCallSkipped', data: { ...ids, attempts: s.attempts, reason: c.reason } }];
    if (c.type === 'PlaceAttempt') {
      // Each attempt is placed once, in order, and never past max-tries.
      if (c.attempt !== s.attempts + 1 || c.attempt > s.scheduled.maxTries) return [];
      return [{ type: 'ScheduledAttemptPlaced', data: { ...ids, attempt: c.attempt, xnid: c.xnid } }];
    }
    if (c.attempt !== s.attempts || s.xnids[c.attempt - 1] !== c.xnid) return [];
    if (c.answered) return [{ type: 'ScheduledCallAnswered', data: { ...ids, attempt: c.attempt, xnid: c.xnid } }];
    return c.attempt >= s.scheduled.maxTries ? [{ type: 'ScheduledCallExhausted', data: { ...ids, attempts: c.attempt } }] : [];
  },
};
