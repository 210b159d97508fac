/** One contract for every EventStore adapter: run it with a factory for a fresh, empty store. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WrongExpectedRevisionError, type EventStore, type RecordedEvent } from '../../src/gateways/event-store/port.js';

const ev = (type: string, data: unknown = {}, id?: string) => ({ type, data, id });

async function take(iter: AsyncIterable<RecordedEvent>, n: number, timeoutMs = 5000): Promise<RecordedEvent[]> {
  const out: RecordedEvent[] = [];
  const it = iter[Symbol.asyncIterator]();
  const deadline = Date.now() + timeoutMs;
  while (out.length < n) {
    const next = await Promise.race([
      it.next(),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`timed out after ${out.length}/${n} events`)), Math.max(1, deadline - Date.now()))),
    ]);
    if (next.done) break;
    out.push(next.value);
  }
  return out;
}

/** The next `it.next()`, or a rejection once `timeoutMs` passed. */
async function nextWithin<T>(it: AsyncIterator<T>, timeoutMs: number, what: () => string): Promise<IteratorResult<T>> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    it.next(),
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out: ${what()}`)), Math.max(1, timeoutMs)))),
  ]).finally(() => clearTimeout(timer));
}

/** Batches from `it` until they hold `n` events (or the iteration ends). */
async function takeBatches(it: AsyncIterator<readonly RecordedEvent[]>, n: number, timeoutMs = 5000): Promise<(readonly RecordedEvent[])[]> {
  const out: (readonly RecordedEvent[])[] = [];
  let count = 0;
  const deadline = Date.now() + timeoutMs;
  while (count < n) {
    const next = await nextWithin(it, deadline - Date.now(), () => `after ${count}/${n} events in batches`);
    if (next.done) break;
    out.push(next.value);
    count += next.value.length;
  }
  return out;
}

const types = (events: readonly RecordedEvent[]) => events.map((e) => e.type);

export function eventStoreContract(name: string, create: () => Promise<EventStore>) {
  describe(`EventStore contract: ${name}`, () => {
    let store: EventStore;
    beforeEach(async () => {
      store = await create();
    });
    afterEach(async () => {
      await store.close();
    });

    it('reads an unknown stream as empty and starts at position 0', async () => {
      expect(await store.readStream('nothing-here')).toEqual([]);
      expect(await store.headPosition()).toBe(0);
    });

    it('appends and reads a stream in revision order with data, metadata and time', async () => {
      const r = await store.appendToStream('s-1', [ev('A', { n: 1 }), { type: 'B', data: { n: 2 }, metadata: { by: 'me' } }], { expectedRevision: 'no_stream' });
      expect(r.nextExpectedRevision).toBe(1);
      const events = await store.readStream('s-1');
      expect(events.map((e) => [e.type, e.revision, e.data])).toEqual([
        ['A', 0, { n: 1 }],
        ['B', 1, { n: 2 }],
      ]);
      expect(events[1]!.metadata).toEqual({ by: 'me' });
      expect(events[0]!.streamId).toBe('s-1');
      expect(typeof events[0]!.id).toBe('string');
      expect(events[0]!.time).toBeGreaterThan(0);
      expect(events[1]!.position).toBeGreaterThan(events[0]!.position);
      expect(r.position).toBe(events[1]!.position);
    });

    it("an event has one time, to the millisecond, whichever way it is read: the append's clock", async () => {
      const sub = store.subscribeToAll();
      // Past a whole second, so a time rounded to the second cannot pass by chance.
      let before = Date.now();
      while (before % 1000 === 0) before = Date.now();
      await store.appendToStream('t', [ev('T1'), { type: 'T2', data: {}, metadata: { by: 'me' } }]);
      const after = Date.now();
      const [live] = await take(sub, 1);
      sub.close();
      const [byStream] = await store.readStream('t', { maxCount: 1 });
      const byAll = (await store.readAll()).find((e) => e.streamId === 't' && e.type === 'T1');
      expect(live!.time).toBeGreaterThanOrEqual(before);
      expect(live!.time).toBeLessThanOrEqual(after);
      expect(byStream!.time).toBe(live!.time);
      expect(byAll!.time).toBe(live!.time);
      // The time is not part of the metadata callers see.
      expect((await store.readStream('t'))[1]!.metadata).toEqual({ by: 'me' });
    });

    it('reads from a revision with a max count', async () => {
      await store.appendToStream('s', [ev('A'), ev('B'), ev('C'), ev('D')]);
      const some = await store.readStream('s', { fromRevision: 1, maxCount: 2 });
      expect(some.map((e) => e.type)).toEqual(['B', 'C']);
    });

    it('reads a stream written by many appends, among other streams, from every revision with any count', async () => {
      // One, two or three events an append, other streams' events between them.
      for (let i = 0, k = 0; k < 12; i++) {
        const n = (i % 3) + 1;
        await store.appendToStream('long', Array.from({ length: n }, (_, j) => ev('E', { k: k + j })));
        k += n;
        await store.appendToStreams([
          { streamId: `other-${i % 2}`, events: [ev('O')], expectedRevision: 'any' },
          { streamId: 'another', events: [ev('O')], expectedRevision: 'any' },
        ]);
      }
      const all = await store.readStream('long');
      const ks = all.map((e) => (e.data as { k: number }).k);
      expect(ks).toEqual(Array.from({ length: ks.length }, (_, i) => i));
      expect(all.map((e) => e.revision)).toEqual(ks);
      for (let i = 1; i < all.length; i++) expect(all[i]!.position).toBeGreaterThan(all[i - 1]!.position);
      for (let from = 0; from <= all.length + 1; from++) {
        for (const count of [undefined, 1, 2, 5, 100]) {
          const got = await store.readStream('long', { fromRevision: from, ...(count === undefined ? {} : { maxCount: count }) });
          expect(got.map((e) => e.revision), `from ${from}, count ${count}`).toEqual(ks.slice(from, count === undefined ? undefined : from + count));
          expect(got.every((e) => e.streamId === 'long')).toBe(true);
        }
      }
    });

    it('checks the expected revision and raises a typed conflict', async () => {
      await store.appendToStream('s', [ev('A')], { expectedRevision: 'no_stream' });
      await expect(store.appendToStream('s', [ev('B')], { expectedRevision: 'no_stream' })).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      await expect(store.appendToStream('s', [ev('B')], { expectedRevision: 5 })).rejects.toMatchObject({ actual: 0, expected: 5 });
      await expect(store.appendToStream('other', [ev('B')], { expectedRevision: 'stream_exists' })).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      await store.appendToStream('s', [ev('B')], { expectedRevision: 0 });
      await store.appendToStream('s', [ev('C')], { expectedRevision: 'stream_exists' });
      await store.appendToStream('s', [ev('D')], { expectedRevision: 'any' });
      expect((await store.readStream('s')).map((e) => e.type)).toEqual(['A', 'B', 'C', 'D']);
    });

    it('lets exactly one of two racing writers with the same expected revision win', async () => {
      await store.appendToStream('race', [ev('Start')]);
      const results = await Promise.allSettled([
        store.appendToStream('race', [ev('X')], { expectedRevision: 0 }),
        store.appendToStream('race', [ev('Y')], { expectedRevision: 0 }),
      ]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      expect(results.filter((r) => r.status === 'rejected' && r.reason instanceof WrongExpectedRevisionError)).toHaveLength(1);
      expect(await store.readStream('race')).toHaveLength(2);
    });

    it('treats a re-append of the same event ids as already done', async () => {
      await store.appendToStream('idem', [ev('A', {}, '6f1c2a43-79b8-4a40-9a65-0d3ab7f2c001')]);
      await store.appendToStream('idem', [ev('A', {}, '6f1c2a43-79b8-4a40-9a65-0d3ab7f2c001')], { expectedRevision: 'no_stream' });
      expect(await store.readStream('idem')).toHaveLength(1);
    });

    it('appends to several streams atomically: all or nothing', async () => {
      await store.appendToStream('b', [ev('B0')]);
      await expect(
        store.appendToStreams([
          { streamId: 'a', events: [ev('A0')], expectedRevision: 'no_stream' },
          { streamId: 'b', events: [ev('B1')], expectedRevision: 'no_stream' },
        ]),
      ).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      expect(await store.readStream('a')).toEqual([]);
      const ok = await store.appendToStreams([
        { streamId: 'a', events: [ev('A0')], expectedRevision: 'no_stream' },
        { streamId: 'b', events: [ev('B1')], expectedRevision: 0 },
      ]);
      expect(ok.map((r) => r.nextExpectedRevision)).toEqual([0, 1]);
    });

    it('reads all streams in one global order from a position', async () => {
      await store.appendToStream('x', [ev('X1')]);
      await store.appendToStream('y', [ev('Y1')]);
      await store.appendToStream('x', [ev('X2')]);
      const all = await store.readAll();
      expect(all.map((e) => e.type)).toEqual(['X1', 'Y1', 'X2']);
      const after = await store.readAll({ after: all[0]!.position });
      expect(after.map((e) => e.type)).toEqual(['Y1', 'X2']);
      expect(await store.readAll({ after: all[0]!.position, maxCount: 1 })).toHaveLength(1);
      expect(await store.headPosition()).toBe(all[2]!.position);
    });

    it('catch-up subscription replays history, then tails live appends in order', async () => {
      await store.appendToStream('h', [ev('H1'), ev('H2')]);
      const sub = store.subscribeToAll();
      const first = await take(sub, 2);
      expect(first.map((e) => e.type)).toEqual(['H1', 'H2']);
      const live = take(sub, 3);
      await store.appendToStream('l', [ev('L1')]);
      await store.appendToStream('m', [ev('L2'), ev('L3')]);
      expect((await live).map((e) => e.type)).toEqual(['L1', 'L2', 'L3']);
      sub.close();
    });

    it('subscription starts after a given position and ends when closed', async () => {
      await store.appendToStream('p', [ev('P1'), ev('P2'), ev('P3')]);
      const all = await store.readAll();
      const sub = store.subscribeToAll({ after: all[1]!.position });
      expect((await take(sub, 1)).map((e) => e.type)).toEqual(['P3']);
      const it = sub[Symbol.asyncIterator]();
      const pending = it.next();
      sub.close();
      expect((await pending).done).toBe(true);
    });

    it('batches(): the same events in the same order as per-event iteration, in non-empty arrays, history then live', async () => {
      // More than a page of history (the embedded adapter reads 500 at a time), in appends of different sizes.
      await store.appendToStream('a', [ev('A1')]);
      await store.appendToStream('b', Array.from({ length: 600 }, (_, i) => ev('B', { i })));
      await store.appendToStreams([
        { streamId: 'a', events: [ev('A2'), ev('A3')], expectedRevision: 'any' },
        { streamId: 'c', events: [ev('C1')], expectedRevision: 'any' },
      ]);
      const perEvent = store.subscribeToAll();
      const batched = store.subscribeToAll();
      const it = batched.batches()[Symbol.asyncIterator]();
      const history = await takeBatches(it, 604);
      const expected = await take(perEvent, 604);
      expect(expected).toHaveLength(604);
      expect(history.every((b) => b.length > 0)).toBe(true);
      expect(history.flat()).toEqual(expected);
      expect(history.flat()).toEqual(await store.readAll());

      const live = takeBatches(it, 4);
      const liveExpected = take(perEvent, 4);
      await store.appendToStream('l', [ev('L1')]);
      await store.appendToStream('m', [ev('L2'), ev('L3')]);
      await store.appendToStream('l', [ev('L4')]);
      const got = await live;
      expect(got.every((b) => b.length > 0)).toBe(true);
      expect(types(got.flat())).toEqual(['L1', 'L2', 'L3', 'L4']);
      expect(got.flat()).toEqual(await liveExpected);
      batched.close();
      perEvent.close();
    });

    it('batches(): events appended while the iteration waits arrive, each time', async () => {
      const sub = store.subscribeToAll();
      const it = sub.batches()[Symbol.asyncIterator]();
      for (const round of [1, 2, 3]) {
        // Asked before the append: the iteration is waiting (for the first round, on an empty log).
        const waiting = takeBatches(it, 2);
        await store.appendToStream(`w-${round}`, [ev(`W${round}a`), ev(`W${round}b`)]);
        expect(types((await waiting).flat())).toEqual([`W${round}a`, `W${round}b`]);
      }
      sub.close();
    });

    it('batches(): close() ends an iteration that waits for events, and a for-await loop over it', async () => {
      await store.appendToStream('p', [ev('P1')]);
      const sub = store.subscribeToAll();
      const it = sub.batches()[Symbol.asyncIterator]();
      expect(types((await takeBatches(it, 1)).flat())).toEqual(['P1']);
      const pending = nextWithin(it, 5000, () => 'close() did not end the waiting batches() iteration');
      sub.close();
      expect((await pending).done).toBe(true);
      expect((await nextWithin(it, 5000, () => 'a closed iteration did not stay ended')).done).toBe(true);

      // The consumers' shape: a loop that ends when another task closes the subscription.
      const other = store.subscribeToAll();
      const seen: string[] = [];
      let closed!: () => void;
      const wasClosed = new Promise<void>((resolve) => (closed = resolve));
      const loop = (async () => {
        for await (const batch of other.batches()) {
          for (const e of batch) seen.push(e.type);
          if (seen.length === 2) {
            setImmediate(() => {
              other.close();
              closed();
            });
          }
        }
      })();
      await store.appendToStream('q', [ev('Q1')]);
      await wasClosed;
      await loop;
      expect(seen).toEqual(['P1', 'Q1']);
    });

    it('batches(): starts after a given position', async () => {
      await store.appendToStream('p', [ev('P1'), ev('P2'), ev('P3')]);
      const all = await store.readAll();
      const sub = store.subscribeToAll({ after: all[1]!.position });
      const it = sub.batches()[Symbol.asyncIterator]();
      expect(types((await takeBatches(it, 1)).flat())).toEqual(['P3']);
      const live = takeBatches(it, 1);
      await store.appendToStream('p', [ev('P4')]);
      expect(types((await live).flat())).toEqual(['P4']);
      sub.close();

      const fromHead = store.subscribeToAll({ after: (await store.readAll()).at(-1)!.position });
      const tail = takeBatches(fromHead.batches()[Symbol.asyncIterator](), 1);
      await store.appendToStream('r', [ev('R1')]);
      expect(types((await tail).flat())).toEqual(['R1']);
      fromHead.close();
    });

    it('appends made at the same time: a conflict fails only its own, the others are stored', async () => {
      await store.appendToStream('g-1', [ev('G')]);
      const results = await Promise.allSettled([
        store.appendToStream('g-1', [ev('Ok1')], { expectedRevision: 0 }),
        store.appendToStreams([
          { streamId: 'g-2', events: [ev('Lost')], expectedRevision: 'no_stream' },
          { streamId: 'g-1', events: [ev('Lost')], expectedRevision: 5 },
        ]),
        store.appendToStream('g-3', [ev('Ok2')], { expectedRevision: 'no_stream' }),
        store.appendToStream('g-1', [ev('Lost')], { expectedRevision: 0 }),
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'rejected']);
      expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(WrongExpectedRevisionError);
      expect((results[3] as PromiseRejectedResult).reason).toBeInstanceOf(WrongExpectedRevisionError);
      expect((await store.readStream('g-1')).map((e) => e.type)).toEqual(['G', 'Ok1']);
      expect(await store.readStream('g-2')).toEqual([]);
      expect((await store.readStream('g-3')).map((e) => e.type)).toEqual(['Ok2']);
      expect((await store.readAll()).map((e) => e.type)).toEqual(['G', 'Ok1', 'Ok2']);
    });
  });
}
