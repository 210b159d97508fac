import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SqliteEventStore } from '../../../src/gateways/event-store/sqlite.js';
import { SqliteReadStore } from '../../../src/gateways/read-store/sqlite.js';
import type { EventStore } from '../../../src/gateways/event-store/port.js';
import type { DocWrite, ReadStore } from '../../../src/gateways/read-store/port.js';
import type { Projection } from '../../../src/projections/projection.js';
import { ProjectionRunner } from '../../../src/projections/runner.js';

/** Counts every application of every event: a double apply shows as a repeated position. */
const counting: Projection = {
  name: 'counting',
  keys: () => ['all'],
  evolve: (doc, e) => ({ n: ((doc?.n as number) ?? 0) + 1, positions: [...((doc?.positions as number[]) ?? []), e.position] }),
};

/** Touches only events of type A: its checkpoint must still advance past the others. */
const onlyA: Projection = {
  name: 'only-a',
  keys: (e) => (e.type === 'A' ? [e.streamId] : []),
  evolve: (doc, e) => ((e.data as { drop?: boolean }).drop ? null : { count: ((doc?.count as number) ?? 0) + 1 }),
};

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** A read store that records what was committed, and can be told to fail commits. */
class SpyReadStore implements ReadStore {
  committed: Record<string, number> = {};
  failNextCommits = 0;
  commits = 0;
  constructor(private readonly inner: ReadStore) {}
  get: ReadStore['get'] = (c, id) => this.inner.get(c, id);
  getVersioned: ReadStore['getVersioned'] = (c, id) => this.inner.getVersioned(c, id);
  getVersionedMany: ReadStore['getVersionedMany'] = (c, ids) => this.inner.getVersionedMany(c, ids);
  find: ReadStore['find'] = (c, w, o) => this.inner.find(c, w, o);
  checkpoint: ReadStore['checkpoint'] = (n) => this.inner.checkpoint(n);
  lowestCheckpoint: ReadStore['lowestCheckpoint'] = (n) => this.inner.lowestCheckpoint(n);
  put: ReadStore['put'] = (c, id, d, o) => this.inner.put(c, id, d, o);
  insertIfAbsent: ReadStore['insertIfAbsent'] = (c, id, d, o) => this.inner.insertIfAbsent(c, id, d, o);
  delete: ReadStore['delete'] = (c, id) => this.inner.delete(c, id);
  close: ReadStore['close'] = () => this.inner.close();
  async commit(writes: DocWrite[], checkpoints: Record<string, number>) {
    this.commits++;
    if (this.failNextCommits > 0) {
      this.failNextCommits--;
      throw Object.assign(new Error('store unreachable'), { code: 'ECONNREFUSED' });
    }
    await this.inner.commit(writes, checkpoints);
    for (const [k, v] of Object.entries(checkpoints)) this.committed[k] = Math.max(this.committed[k] ?? 0, v);
  }
}

describe('ProjectionRunner', () => {
  let dir: string;
  let events: EventStore;
  let reads: ReadStore;
  const open = () => {
    events = new SqliteEventStore(path.join(dir, 'events.db'));
    reads = new SqliteReadStore(path.join(dir, 'read.db'));
  };
  const append = async (n: number, type = 'A') => {
    let position = 0;
    for (let i = 0; i < n; i++) position = (await events.appendToStream(`s-${i % 3}`, [{ type, data: {} }])).position;
    return position;
  };
  const applied = async (store: ReadStore = reads) => ((await store.get('counting', 'all'))?.positions as number[] | undefined) ?? [];

  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'ct-runner-'));
    open();
  });
  afterEach(async () => {
    await reads.close();
    await events.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('catches up from the log at start, then applies live events, each exactly once', async () => {
    const head = await append(5);
    const runner = new ProjectionRunner(events, reads, [counting]);
    await runner.start();
    await runner.waitFor(head);
    expect(await applied()).toEqual(range(1, 5));
    const later = await append(4);
    await runner.waitFor(later);
    expect(await applied()).toEqual(range(1, 9));
    expect(await reads.checkpoint('counting')).toBe(9);
    expect(runner.position).toBe(9);
    await runner.stop();
  });

  it("a group commit's events reach the read models in one commit, and each writer then reads its own write", async () => {
    const spy = new SpyReadStore(reads);
    const runner = new ProjectionRunner(events, spy, [counting, onlyA]);
    await runner.start();
    const before = spy.commits;
    // Forty commands at once: one group commit, one sync, then one read-model commit for all of them.
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => events.appendToStream(`g-${i}`, [{ type: i % 2 ? 'A' : 'B', data: {} }])));
    for (const r of results) {
      await runner.waitFor(r.position);
      expect(await applied(spy)).toContain(r.position);
    }
    expect(spy.commits - before).toBe(1);
    expect(await applied(spy)).toEqual(range(1, 40));
    expect(await spy.checkpoint('only-a')).toBe(40);
    await runner.stop();
  });

  it('a restart on the same files resumes from the checkpoint without applying anything twice', async () => {
    await append(6);
    const first = new ProjectionRunner(events, reads, [counting]);
    await first.start();
    await first.waitFor(6);
    await first.stop();
    await reads.close();
    await events.close();

    open();
    await append(3);
    const second = new ProjectionRunner(events, reads, [counting]);
    await second.start();
    await second.waitFor(9);
    expect(await applied()).toEqual(range(1, 9));
    await second.stop();
  });

  it('a crash between batches resumes after the last committed batch without double-applying', async () => {
    await append(10);
    const all = await events.readAll();
    // The process applies two batches, then dies (never stopped, stores never closed).
    const crashed = new ProjectionRunner(events, reads, [counting]);
    await crashed.applyBatch(all.slice(0, 3));
    await crashed.applyBatch(all.slice(3, 5));
    const staleEvents = events;
    const staleReads = reads;

    open();
    // A new runner given a batch that overlaps what was committed applies only the new part...
    const recovering = new ProjectionRunner(events, reads, [counting]);
    await recovering.applyBatch(all.slice(2, 7));
    expect(await applied()).toEqual(range(1, 7));
    // ...and a started one catches up with the rest from the stored checkpoint.
    const resumed = new ProjectionRunner(events, reads, [counting]);
    await resumed.start();
    await resumed.waitFor(10);
    expect(await applied()).toEqual(range(1, 10));
    await resumed.stop();
    await staleReads.close();
    await staleEvents.close();
  });

  it('advances every checkpoint past events a projection ignores, and deletes on null', async () => {
    await events.appendToStream('x', [{ type: 'A', data: {} }, { type: 'A', data: {} }]);
    await events.appendToStream('y', [{ type: 'A', data: {} }]);
    const head = (await events.appendToStream('z', [{ type: 'B', data: {} }, { type: 'B', data: {} }])).position;
    const runner = new ProjectionRunner(events, reads, [counting, onlyA]);
    await runner.start();
    await runner.waitFor(head);
    expect(await reads.get('only-a', 'x')).toEqual({ count: 2 });
    expect(await reads.checkpoint('only-a')).toBe(head);
    const dropped = (await events.appendToStream('x', [{ type: 'A', data: { drop: true } }])).position;
    await runner.waitFor(dropped);
    expect(await reads.get('only-a', 'x')).toBeNull();
    expect(await reads.get('only-a', 'y')).toEqual({ count: 1 });
    await runner.stop();
  });

  it('a projection naming its event types is asked only about events of those types; its checkpoint still moves past the others', async () => {
    const asked: string[] = [];
    const namedA: Projection = { name: 'named-a', canHandle: ['A'], keys: (e) => (asked.push(e.type), e.type === 'A' ? [e.streamId] : []), evolve: (doc) => ({ n: ((doc?.n as number) ?? 0) + 1 }) };
    const onlyB = (await events.appendToStream('z', [{ type: 'B', data: {} }, { type: 'B', data: {} }])).position;
    const runner = new ProjectionRunner(events, reads, [counting, namedA]);
    await runner.start();
    await runner.waitFor(onlyB);
    expect(asked).toEqual([]);
    expect(await reads.checkpoint('named-a')).toBe(onlyB);
    expect(await applied()).toEqual([1, 2]); // a projection naming no types sees every event
    const mixed = (await events.appendToStream('x', [{ type: 'B', data: {} }, { type: 'A', data: {} }])).position;
    await runner.waitFor(mixed);
    // A batch holding one of its types: asked about the events of its types only.
    expect(asked).toEqual(['A']);
    expect(await reads.get('named-a', 'x')).toEqual({ n: 1 });
    expect(await reads.checkpoint('named-a')).toBe(mixed);
    await runner.stop();
  });

  it('a projection added later replays the whole log while the others skip what they applied', async () => {
    await append(4);
    const first = new ProjectionRunner(events, reads, [counting]);
    await first.start();
    await first.waitFor(4);
    await first.stop();
    const both = new ProjectionRunner(events, reads, [counting, onlyA]);
    await both.start();
    await both.waitFor(4);
    expect(await applied()).toEqual(range(1, 4));
    expect(await reads.find('only-a')).toEqual([{ count: 2 }, { count: 1 }, { count: 1 }]);
    await both.stop();
  });

  it('waitFor resolves only once the event at that position is committed', async () => {
    const spy = new SpyReadStore(reads);
    const runner = new ProjectionRunner(events, spy, [counting]);
    await runner.start();
    const seenAtResolve: number[] = [];
    const target = 3;
    const waiting = runner.waitFor(target).then(() => seenAtResolve.push(spy.committed.counting ?? 0));
    await append(2);
    await runner.waitFor(2);
    expect(seenAtResolve).toEqual([]);
    await append(1);
    await waiting;
    expect(seenAtResolve[0]).toBeGreaterThanOrEqual(target);
    // An applied position resolves at once.
    await runner.waitFor(1, 1);
    await runner.stop();
  });

  it('waitFor rejects with UNAVAILABLE when the position is not reached in time', async () => {
    const runner = new ProjectionRunner(events, reads, [counting]);
    await runner.start();
    await expect(runner.waitFor(50, 30)).rejects.toMatchObject({ code: 'UNAVAILABLE', status: 503 });
    await runner.stop();
  });

  it('retries a batch whose commit failed and applies it exactly once', async () => {
    const spy = new SpyReadStore(reads);
    spy.failNextCommits = 2;
    const logger = { error: vi.fn(), warn: vi.fn(), info: vi.fn() };
    const runner = new ProjectionRunner(events, spy, [counting], { logger });
    await runner.start();
    const head = await append(5);
    await runner.waitFor(head);
    expect(await applied()).toEqual(range(1, 5));
    expect(logger.error).toHaveBeenCalledTimes(2);
    await runner.stop();
  });

  it('batches: a long backlog is committed in pages of maxBatch', async () => {
    const head = await append(25);
    const spy = new SpyReadStore(reads);
    const runner = new ProjectionRunner(events, spy, [counting], { maxBatch: 10 });
    await runner.start();
    await runner.waitFor(head);
    expect(await applied()).toEqual(range(1, 25));
    expect(spy.commits).toBeGreaterThanOrEqual(3);
    expect(spy.commits).toBeLessThan(25);
    await runner.stop();
  });

  it('a batch touching more than maxBatchDocs documents is committed in runs of at most that many (one event alone may pass it)', async () => {
    // Each event touches as many documents as its data says.
    const wide: Projection = { name: 'wide', keys: (e) => range(1, (e.data as { n: number }).n).map((i) => `${e.position}-${i}`), evolve: (_doc, e) => ({ at: e.position }) };
    const sizes = [2, 2, 5, 1, 1, 1];
    const { position: head } = await events.appendToStream('w', sizes.map((n) => ({ type: 'W', data: { n } })));
    const spy = new SpyReadStore(reads);
    const written: number[] = [];
    const commit = spy.commit.bind(spy);
    spy.commit = async (writes, checkpoints) => {
      written.push(writes.length);
      return commit(writes, checkpoints);
    };
    const runner = new ProjectionRunner(events, spy, [wide], { maxBatchDocs: 4 });
    await runner.start();
    await runner.waitFor(head);
    expect(written).toEqual([4, 5, 3]);
    expect(await reads.get('wide', '3-5')).toEqual({ at: 3 });
    expect(await reads.checkpoint('wide')).toBe(head);
    await runner.stop();
  });

  it('stop drains what was received, so nothing runs against the stores after they close', async () => {
    const logger = { error: vi.fn(), warn: vi.fn(), info: vi.fn() };
    const runner = new ProjectionRunner(events, reads, [counting], { logger });
    await runner.start();
    await append(20);
    await runner.stop();
    const reached = await reads.checkpoint('counting');
    await reads.close();
    // Any flush the runner scheduled before stop resolved runs within these turns of the loop.
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
    expect(logger.error).not.toHaveBeenCalled();
    // Whatever it did not apply is applied by the next start, once.
    reads = new SqliteReadStore(path.join(dir, 'read.db'));
    expect(await reads.checkpoint('counting')).toBe(reached);
    const next = new ProjectionRunner(events, reads, [counting]);
    await next.start();
    await next.waitFor(20);
    expect(await applied()).toEqual(range(1, 20));
    await next.stop();
  });

  it('refuses two projections with one name', () => {
    expect(() => new ProjectionRunner(events, reads, [counting, { ...counting }])).toThrow(/duplicate/);
  });
});
