/** The PostgreSQL event store's memory of its own groups (OwnTail): runs of positions, gaps between them, groups answered out of order. */
import { describe, expect, it } from 'vitest';
import { OwnTail, type Sent, type SentAppend } from '../../src/gateways/event-store/postgres-tail.js';

/** A group of one-event commands on distinct streams, stored from `start` on. */
function group(start: number, streams: string[]): Sent {
  const commands: SentAppend[][] = streams.map((s) => [{ s, x: 'any', t: 1, ev: [{ i: `${s}-${start}`, y: 'E', d: JSON.stringify({ s }), m: null }] }]);
  return { start, commands, outcomes: streams.map((_, k) => ({ ok: [[0, start + k + 1, 1]] })) };
}

const positions = (tail: OwnTail, after: number) => tail.read(after, 100)?.map((e) => e.position) ?? null;

describe('OwnTail', () => {
  it('joins groups answered out of order into one run', () => {
    const tail = new OwnTail();
    tail.remember(group(0, ['a', 'b']));
    tail.remember(group(4, ['e', 'f']));
    expect(positions(tail, 2)).toBeNull();
    expect(positions(tail, 4)).toEqual([5, 6]);
    tail.remember(group(2, ['c', 'd']));
    expect(positions(tail, 0)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(tail.read(1, 2)!.map((e) => e.data)).toEqual([{ s: 'b' }, { s: 'c' }]);
    expect(tail.end).toBe(6);
    expect(tail.start).toBe(0);
  });

  it("leaves another process's positions out: a read that needs them finds nothing", () => {
    const tail = new OwnTail();
    tail.remember(group(0, ['a']));
    tail.remember(group(3, ['b']));
    expect(positions(tail, 0)).toEqual([1]);
    expect(positions(tail, 1)).toBeNull();
    expect(positions(tail, 3)).toEqual([4]);
    expect(positions(tail, 4)).toBeNull();
    expect(new OwnTail().start).toBe(Infinity);
  });

  it('keeps the newest 4,096 events', () => {
    const tail = new OwnTail();
    for (let g = 0; g < 50; g++) tail.remember(group(g * 100, Array.from({ length: 100 }, (_, k) => `s${k}`)));
    expect(positions(tail, 5000 - 4096 - 1)).toBeNull();
    expect(positions(tail, 5000 - 4096)?.[0]).toBe(5000 - 4096 + 1);
    expect(tail.end).toBe(5000);
  });
});
