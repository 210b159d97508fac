import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../../src/gateways/event-store/port.js';
import type { Projection } from '../../src/projections/projection.js';
import { callStatsProjection, inIvrProjection, meteringProjection, queuedCallersProjection } from '../../src/projections/calls.js';

/** Applies a projection to events in order, as the runner does, and returns its documents. */
function run(p: Projection<any>, events: Omit<RecordedEvent, 'id' | 'streamId' | 'revision' | 'metadata'>[]) {
  const docs = new Map<string, unknown>();
  events.forEach((e, i) => {
    const full = { ...e, id: `e${i}`, streamId: `call-${(e.data as { xnid: string }).xnid}`, revision: i, metadata: {} } as RecordedEvent;
    for (const key of p.keys(full)) {
      const next = p.evolve((docs.get(key) ?? null) as never, full, key);
      if (next === null) docs.delete(key);
      else docs.set(key, next);
    }
  });
  return docs;
}

const started = (xnid: string, direction: 'Inbound' | 'Outbound', blocked = false, day = '2026-11-23') => ({
  type: 'CallStarted',
  data: { xnid, svcId: 101, direction, blocked, day, customerNumber: '9876543210', time: 1 },
  position: 0,
  time: 1,
});
const ev = (type: string, xnid: string, extra: object = {}) => ({ type, data: { xnid, svcId: 101, time: 2, ...extra }, position: 0, time: 2 });

describe('call read models', () => {
  it('call-stats counts calls begun per service and day, inbound and outbound, not blocked callers', () => {
    const docs = run(callStatsProjection, [started('a', 'Inbound'), started('b', 'Outbound'), started('c', 'Inbound', true), started('d', 'Outbound', false, '2026-11-24')]);
    expect(docs.get('101-2026-11-23')).toEqual({ totalCalls: 2, ibCalls: 1, obCalls: 1 });
    expect(docs.get('101-2026-11-24')).toEqual({ totalCalls: 1, ibCalls: 0, obCalls: 1 });
  });

  it('in-ivr holds an inbound caller until queued, offered to an agent, bridged or gone', () => {
    for (const leave of ['CallQueued', 'AgentRing', 'CallBridged', 'CallEnded']) {
      expect(run(inIvrProjection, [started('a', 'Inbound')]).size).toBe(1);
      expect(run(inIvrProjection, [started('a', 'Inbound'), ev(leave, 'a')]).size).toBe(0);
    }
    expect(run(inIvrProjection, [started('b', 'Outbound'), started('c', 'Inbound', true)]).size).toBe(0);
  });

  it('queued-callers lists waiting callers until dequeued or ended', () => {
    const queued = ev('CallQueued', 'a', { queueId: 1, number: '9876543210', time: 5 });
    expect([...run(queuedCallersProjection, [queued]).values()]).toEqual([{ svcId: 101, queueId: 1, number: '9876543210', xnid: 'a', since: 5 }]);
    expect(run(queuedCallersProjection, [queued, ev('CallDequeued', 'a')]).size).toBe(0);
    expect(run(queuedCallersProjection, [queued, ev('CallEnded', 'a')]).size).toBe(0);
  });

  it('metering counts inbound, outbound and spam', () => {
    const docs = run(meteringProjection, [started('a', 'Inbound'), started('b', 'Outbound'), started('c', 'Inbound', true), started('d', 'Outbound')]);
    expect(docs.get('101')).toEqual({ inbound: 1, outbound: 2, spam: 1 });
  });
});
