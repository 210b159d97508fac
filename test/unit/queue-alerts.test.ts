/** Queue alert readings and the alert aggregate (CONTRACT section 17). */
import { describe, expect, it } from 'vitest';
import { queueReadings, recentServiceLevel, type QueueEntry } from '../../src/domain/queue-alerts.js';
import { queueAlertDecider, type QueueAlertState } from '../../src/commands/queue-alert/queue-alert.js';

const NOW = 10_000_000;
const entry = (agoS: number, answeredAfterS: number | null, ended = answeredAfterS !== null): QueueEntry => ({
  queuedAt: NOW - agoS * 1000,
  answeredAt: answeredAfterS === null ? null : NOW - agoS * 1000 + answeredAfterS * 1000,
  ended,
});

describe('service level of the last 15 minutes', () => {
  it('needs 5 entered; answered within 20 s meet it; gone or waiting past 20 s do not; waiting under 20 s are undecided', () => {
    expect(recentServiceLevel([entry(60, 5), entry(60, 5), entry(60, 5), entry(60, 5)], NOW)).toBeNull();
    expect(recentServiceLevel([entry(60, 5), entry(60, 25), entry(60, null, true), entry(30, null), entry(10, null)], NOW)).toBe(25);
    // Older than 15 minutes: out of the window.
    expect(recentServiceLevel([entry(901, 5), entry(60, 5), entry(60, 5), entry(60, 5), entry(60, 5)], NOW)).toBeNull();
    // All waiting under 20 s: nothing decided yet.
    expect(recentServiceLevel([entry(1, null), entry(2, null), entry(3, null), entry(4, null), entry(5, null)], NOW)).toBeNull();
  });

  it('readings only for the alerts a queue configures; wait is in alert past maxWaitS', () => {
    expect(queueReadings({ id: 1, name: 'Q' }, [NOW - 99_000], [], NOW)).toEqual([]);
    expect(queueReadings({ id: 1, name: 'Q', maxWaitS: 60 }, [NOW - 60_000, NOW - 5_000], [], NOW)).toEqual([{ reason: 'wait', on: false, value: 60, threshold: 60 }]);
    expect(queueReadings({ id: 1, name: 'Q', maxWaitS: 60 }, [NOW - 60_500], [], NOW)[0]).toMatchObject({ on: true, value: 60.5 });
    // Just past the threshold reads past it (rounded up), never equal to it.
    expect(queueReadings({ id: 1, name: 'Q', maxWaitS: 60 }, [NOW - 60_001], [], NOW)[0]).toMatchObject({ on: true, value: 60.1 });
    const low = [entry(60, 5), entry(60, 30), entry(60, 30), entry(60, 30), entry(60, 30)];
    expect(queueReadings({ id: 1, name: 'Q', serviceLevelTarget: 80 }, [], low, NOW)).toEqual([{ reason: 'serviceLevel', on: true, value: 20, threshold: 80 }]);
  });
});

describe('the alert aggregate', () => {
  it('stores a crossing once: into alert, nothing while it holds, out of it once', () => {
    let s: QueueAlertState = queueAlertDecider.initialState();
    const read = (on: boolean, value: number) => {
      const events = queueAlertDecider.decide({ type: 'Read', svcId: 1, queueId: 2, reading: { reason: 'wait', on, value, threshold: 10 }, time: value }, s);
      for (const e of events) s = queueAlertDecider.evolve(s, e);
      return events.map((e) => e.type);
    };
    expect(read(false, 1)).toEqual([]);
    expect(read(true, 11)).toEqual(['QueueAlert']);
    expect(read(true, 12)).toEqual([]);
    expect(read(false, 0)).toEqual(['QueueAlertCleared']);
    expect(read(false, 0)).toEqual([]);
    // Reasons are independent.
    expect(queueAlertDecider.decide({ type: 'Read', svcId: 1, queueId: 2, reading: { reason: 'serviceLevel', on: true, value: 50, threshold: 80 }, time: 1 }, { on: { wait: true } })).toHaveLength(1);
  });
});
