/** The aggregate cache: tail reads only, never stale across stores on one file, snapshots bound a cold fold. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AggregateCache, MemorySnapshotStore, SNAPSHOT_EVERY, type Folder } from '../../../src/commands/aggregate-cache.js';
import { handleCommand, toDomain, type Decider, type DomainEvent } from '../../../src/commands/decider.js';
import { SqliteEventStore } from '../../../src/gateways/event-store/sqlite.js';
import { SqliteSnapshotStore } from '../../../src/gateways/snapshot-store/sqlite.js';
import type { EventStore, ReadStreamOptions } from '../../../src/gateways/event-store/port.js';

type E = DomainEvent<'Added', { by: number }>;
const sum: Decider<{ by: number; expect?: number }, { total: number; n: number }, E> = {
  initialState: () => ({ total: 0, n: 0 }),
  evolve: (s, e) => ({ total: s.total + e.data.by, n: s.n + 1 }),
  snapshot: 'sum@1',
  // Refuses unless the state is what the caller last saw: a stale state would be a refusal.
  decide: (c, s) => {
    if (c.expect !== undefined && c.expect !== s.total) throw new Error(`stale: saw ${s.total}, expected ${c.expect}`);
    return [{ type: 'Added', data: { by: c.by } }];
  },
};

/** Counts the events each readStream returns. */
function counting(store: EventStore) {
  const c = { events: 0, reads: 0, store: null as unknown as EventStore };
  c.store = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'readStream') {
        return async (id: string, o?: ReadStreamOptions) => {
          const r = await target.readStream(id, o);
          c.reads++;
          c.events += r.length;
          return r;
        };
      }
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  return c;
}

describe('aggregate cache', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'ct-cache-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('two writers on one file (two processes): each command decides on the latest acknowledged write', async () => {
    const file = path.join(dir, 'events.db');
    const a = new SqliteEventStore(file);
    const b = new SqliteEventStore(file);
    try {
      let total = 0;
      for (let i = 0; i < 40; i++) {
        const store = i % 3 === 0 ? a : b; // uneven, so each cache misses writes of the other
        const r = await handleCommand(store, 's-1', sum, { by: i + 1, expect: total });
        total += i + 1;
        expect(r.state.total).toBe(total);
      }
      expect((await a.readStream('s-1')).length).toBe(40);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('a warm command reads no event of the history; a cold one starts at the latest snapshot', async () => {
    const file = path.join(dir, 'events.db');
    const raw = new SqliteEventStore(file);
    const snaps = new SqliteSnapshotStore(path.join(dir, 'snapshots.db'));
    try {
      const c = counting(raw);
      const cache = new AggregateCache(c.store, snaps);
      // History written by the store directly, as another process would.
      const history = SNAPSHOT_EVERY * 3 + 17;
      for (let i = 0; i < history; i += 100) await raw.appendToStream('s-1', Array.from({ length: Math.min(100, history - i) }, () => ({ type: 'Added', data: { by: 1 } })));
      const first = await cache.load('s-1', sum, toDomain<E>);
      expect(first).toMatchObject({ state: { total: history }, revision: history - 1 });
      expect(c.events).toBe(history);
      // Warm: nothing new, nothing folded.
      c.events = 0;
      await cache.load('s-1', sum, toDomain<E>);
      expect(c.events).toBe(0);
      // Cold (a new process): the snapshot written by the first fold bounds what is read.
      const c2 = counting(raw);
      const cold = new AggregateCache(c2.store, snaps);
      const again = await cold.load('s-1', sum, toDomain<E>);
      expect(again).toMatchObject({ state: { total: history, n: history }, revision: history - 1 });
      expect(c2.events).toBe(0);
      await raw.appendToStream('s-1', [{ type: 'Added', data: { by: 5 } }]);
      const c3 = counting(raw);
      expect((await new AggregateCache(c3.store, snaps).load('s-1', sum, toDomain<E>)).state.total).toBe(history + 5);
      expect(c3.events).toBe(1);
    } finally {
      await raw.close();
      snaps.close();
    }
  });

  it('is bounded: least recently used streams are dropped and folded again when needed', async () => {
    const store = new SqliteEventStore(':memory:');
    const cache = new AggregateCache(store, new MemorySnapshotStore(), 3);
    for (let i = 0; i < 5; i++) await store.appendToStream(`s-${i}`, [{ type: 'Added', data: { by: i } }]);
    for (let i = 0; i < 5; i++) await cache.load(`s-${i}`, sum, toDomain<E>);
    expect(cache.size).toBe(3);
    expect((await cache.load('s-0', sum, toDomain<E>)).state.total).toBe(0);
    expect((await cache.load('s-4', sum, toDomain<E>)).state.total).toBe(4);
    await store.close();
  });

  it('keeps states of different deciders of one stream apart', async () => {
    const store = new SqliteEventStore(':memory:');
    const cache = new AggregateCache(store);
    const count: Folder<number, E> = { initialState: () => 0, evolve: (n) => n + 1 };
    await store.appendToStream('s', [{ type: 'Added', data: { by: 7 } }, { type: 'Added', data: { by: 7 } }]);
    expect((await cache.load('s', sum, toDomain<E>)).state.total).toBe(14);
    expect((await cache.load('s', count, toDomain<E>)).state).toBe(2);
    await store.close();
  });
});
