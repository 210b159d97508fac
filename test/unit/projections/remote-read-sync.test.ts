/** remoteReadSync (a process without the projector): every waiting request shares one poll of the stored checkpoints. */
import { describe, expect, it } from 'vitest';
import { remoteReadSync } from '../../../src/projections/read-sync.js';
import type { EventStore } from '../../../src/gateways/event-store/port.js';
import type { ReadStore } from '../../../src/gateways/read-store/port.js';

/** A read store whose checkpoint queries answer when the test says, with the checkpoint at that moment. */
function fakeReads() {
  const state = { checkpoint: 0, queries: 0, pending: [] as ((p: number) => void)[], failNext: null as Error | null };
  const reads = {
    lowestCheckpoint: () => {
      state.queries++;
      if (state.failNext) {
        const err = state.failNext;
        state.failNext = null;
        return Promise.reject(err);
      }
      return new Promise<number>((r) => state.pending.push(r));
    },
  } as unknown as ReadStore;
  const answer = () => {
    const due = state.pending;
    state.pending = [];
    for (const r of due) r(state.checkpoint);
  };
  return { state, reads, answer };
}
const events = { headPosition: async () => 0 } as unknown as EventStore;
const tick = () => new Promise((r) => setImmediate(r));

describe('remoteReadSync', () => {
  it('asks one query at a time for every waiter, and answers a waiter only by a query sent after it came', async () => {
    const { state, reads, answer } = fakeReads();
    const sync = remoteReadSync(events, reads, ['a', 'b'], [], 5);
    const done: number[] = [];
    const w1 = sync.waitFor(3).then(() => done.push(3));
    expect(state.queries).toBe(1);
    // Came while the first query was out: it waits for the next.
    const w2 = sync.waitFor(2).then(() => done.push(2));
    const w3 = sync.waitFor(5).then(() => done.push(5));
    expect(state.queries).toBe(1);
    state.checkpoint = 4;
    answer();
    await tick();
    expect(done).toEqual([3]);
    // Asked again at once for the ones that came meanwhile.
    expect(state.queries).toBe(2);
    answer();
    await w1;
    await w2;
    expect(done).toEqual([3, 2]);
    // The one still behind is polled.
    state.checkpoint = 5;
    for (let i = 0; i < 200 && state.pending.length === 0; i++) await new Promise((r) => setTimeout(r, 2));
    answer();
    await w3;
    expect(done).toEqual([3, 2, 5]);
  });

  it('fails the waiters of a query that failed, and times a waiter out on its own deadline', async () => {
    const { state, reads, answer } = fakeReads();
    const sync = remoteReadSync(events, reads, ['a'], [], 5);
    state.failNext = new Error('unreachable');
    await expect(sync.waitFor(1)).rejects.toThrow('unreachable');
    const late = sync.waitFor(10, 20);
    const outcome = late.then(
      () => 'resolved',
      (err: Error) => err.message,
    );
    const started = Date.now();
    while (Date.now() - started < 2000) {
      answer();
      const settled = await Promise.race([outcome, new Promise((r) => setTimeout(r, 5, null))]);
      if (settled) break;
    }
    expect(await outcome).toMatch(/did not reach position 10 within 20 ms/);
  });
});
