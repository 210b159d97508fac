/** The scheduled-call decider: attempts in order up to max-tries, the outcome of each, dnd skips. */
import { describe, expect, it } from 'vitest';
import { scheduleDecider, type CallScheduledData, type ScheduleEvent } from '../../../src/commands/schedule/schedule.js';
import { deciderSpec } from '../../support/decider-spec.js';

const { given } = deciderSpec(scheduleDecider);
const data: CallScheduledData = { id: 'sch1', svcId: 101, number: '9876543210', runAt: 5_000, maxTries: 2, skillId: null, namedAgentId: null, countryCode: '', userId: 1, time: 1_000 };
const scheduled: ScheduleEvent = { type: 'CallScheduled', data };
const ids = (time: number) => ({ id: 'sch1', svcId: 101, time });
const placed = (attempt: number, xnid: string, time: number): ScheduleEvent => ({ type: 'ScheduledAttemptPlaced', data: { ...ids(time), attempt, xnid } });

describe('schedule decider', () => {
  it('is scheduled once', () => {
    given().when({ type: 'Schedule', data }).then(scheduled);
    given(scheduled).when({ type: 'Schedule', data: { ...data, runAt: 9 } }).thenNothingHappened();
  });

  it('places each attempt once, in order, and never past max-tries', () => {
    expect(given(scheduled).when({ type: 'PlaceAttempt', attempt: 1, xnid: 'x1', time: 5_000 }).then(placed(1, 'x1', 5_000))).toMatchObject({ attempts: 1, xnids: ['x1'] });
    given(scheduled, placed(1, 'x1', 5_000)).when({ type: 'PlaceAttempt', attempt: 1, xnid: 'x9', time: 5_001 }).thenNothingHappened();
    given(scheduled).when({ type: 'PlaceAttempt', attempt: 2, xnid: 'x2', time: 5_000 }).thenNothingHappened();
    given(scheduled, placed(1, 'x1', 5_000), placed(2, 'x2', 6_000)).when({ type: 'PlaceAttempt', attempt: 3, xnid: 'x3', time: 7_000 }).thenNothingHappened();
    given().when({ type: 'PlaceAttempt', attempt: 1, xnid: 'x1', time: 1 }).thenNothingHappened();
  });

  it('an answered attempt ends it; a miss waits for the next try; the last miss exhausts it', () => {
    const s = given(scheduled, placed(1, 'x1', 5_000))
      .when({ type: 'RecordOutcome', attempt: 1, xnid: 'x1', answered: true, time: 6_000 })
      .then({ type: 'ScheduledCallAnswered', data: { ...ids(6_000), attempt: 1, xnid: 'x1' } });
    expect(s.done).toBe(true);
    given(scheduled, placed(1, 'x1', 5_000)).when({ type: 'RecordOutcome', attempt: 1, xnid: 'x1', answered: false, time: 6_000 }).thenNothingHappened();
    given(scheduled, placed(1, 'x1', 5_000), placed(2, 'x2', 7_000))
      .when({ type: 'RecordOutcome', attempt: 2, xnid: 'x2', answered: false, time: 8_000 })
      .then({ type: 'ScheduledCallExhausted', data: { ...ids(8_000), attempts: 2 } });
  });

  it('an outcome for another call or an old attempt is ignored', () => {
    given(scheduled, placed(1, 'x1', 5_000)).when({ type: 'RecordOutcome', attempt: 1, xnid: 'other', answered: true, time: 6_000 }).thenNothingHappened();
    given(scheduled, placed(1, 'x1', 5_000), placed(2, 'x2', 7_000)).when({ type: 'RecordOutcome', attempt: 1, xnid: 'x1', answered: true, time: 8_000 }).thenNothingHappened();
  });

  it('a number that became dnd or blocked ends it skipped, and nothing is placed after', () => {
    const skipped: ScheduleEvent = { type: 'ScheduledCallSkipped', data: { ...ids(5_000), attempts: 0, reason: 'dnd' } };
    expect(given(scheduled).when({ type: 'Skip', reason: 'dnd', time: 5_000 }).then(skipped).done).toBe(true);
    given(scheduled, skipped).when({ type: 'PlaceAttempt', attempt: 1, xnid: 'x1', time: 5_001 }).thenNothingHappened();
    given(scheduled, skipped).when({ type: 'Skip', reason: 'blocked', time: 5_002 }).thenNothingHappened();
    given(scheduled, placed(1, 'x1', 5_000)).when({ type: 'Skip', reason: 'blocked', time: 6_000 }).thenMatches({ type: 'ScheduledCallSkipped', data: { attempts: 1, reason: 'blocked' } });
  });
});
