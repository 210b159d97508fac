/**
 * Exactly once without transactions: the projection runner on the MongoDB read store (through the
 * wire-protocol double) survives a crash after a commit's documents were stored and before its
 * checkpoint was, and a crash in the middle of the documents; no event is applied twice.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SqliteEventStore } from '../../../src/gateways/event-store/sqlite.js';
import { MongoReadStore } from '../../../src/gateways/read-store/mongodb.js';
import { HotReadStore } from '../../../src/gateways/read-store/hot.js';
import type { DocWrite, ReadStore } from '../../../src/gateways/read-store/port.js';
import type { Projection } from '../../../src/projections/projection.js';
import { ProjectionRunner } from '../../../src/projections/runner.js';
import { MongoDouble } from '../../support/mongo-double/server.js';

/** Every application of every event leaves its position: a double apply shows as a repeat. */
const counting: Projection = {
  name: 'counting',
  keys: () => ['all'],
  evolve: (doc, e) => ({ positions: [...((doc?.positions as number[]) ?? []), e.position] }),
};
/** One document per stream, counting its events; an event with `drop` deletes it. */
const perStream: Projection = {
  name: 'per-stream',
  keys: (e) => [e.streamId],
  evolve: (doc, e) => ((e.data as { drop?: boolean }).drop ? null : { positions: [...((doc?.positions as number[]) ?? []), e.position] }),
};
const projections = [counting, perStream];
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('ProjectionRunner on MongoDB: a crash between documents and checkpoint', () => {
  const double = new MongoDouble();
  let dir: string;
  let events: SqliteEventStore;
  let dbName: string;
  let n = 0;
  const stores: ReadStore[] = [];
  const openStore = async () => {
    const s = await MongoReadStore.open(double.url(dbName));
    stores.push(s);
    return s;
  };

  beforeAll(() => double.start());
  afterAll(() => double.stop());
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'ct-mongo-crash-'));
    events = new SqliteEventStore(path.join(dir, 'events.db'));
    dbName = `crash-${n++}`;
  });
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
    await events.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Positions 1..9 on streams s-0, s-1, s-2 in turn; position 8 (on s-1) drops s-1's document. */
  const appendNine = async () => {
    for (let i = 1; i <= 9; i++) await events.appendToStream(`s-${(i - 1) % 3}`, [{ type: 'E', data: { drop: i === 8 } }]);
  };

  const crashAfterDocuments = async () => {
    await appendNine();
    const all = await events.readAll();
    const crashed = new ProjectionRunner(events, await openStore(), projections);
    await crashed.applyBatch(all.slice(0, 4));
    // The process dies as it writes the checkpoints: every document of the batch is stored.
    double.failNext({ command: 'update', collection: '_checkpoints', mode: 'close' });
    await expect(crashed.applyBatch(all.slice(4))).rejects.toThrow();
  };

  it.each([
    ['the MongoDB store', (s: ReadStore) => s],
    ['hot read models over it', (s: ReadStore) => new HotReadStore(s, new Set(['counting', 'per-stream']))],
    ['the write-through over it (nothing hot)', (s: ReadStore) => new HotReadStore(s, new Set())],
  ])('documents ahead of their checkpoint: a restart on %s replays the batch and applies nothing twice', async (_, wrap) => {
    await crashAfterDocuments();
    const store = wrap(await openStore());
    expect(await store.checkpoint('counting')).toBe(4);
    expect((await store.getVersioned('counting', 'all')).position).toBe(9);
    expect(await store.get('counting', 'all')).toEqual({ positions: range(1, 9) });

    const runner = new ProjectionRunner(events, store, projections);
    await runner.start();
    await runner.waitFor(9);
    expect(await store.get('counting', 'all')).toEqual({ positions: range(1, 9) });
    expect(await store.get('per-stream', 's-0')).toEqual({ positions: [1, 4, 7] });
    // s-1 was deleted at 8; replaying 5 (an event of s-1) must not bring it back.
    expect(await store.get('per-stream', 's-1')).toBeNull();
    expect(await store.get('per-stream', 's-2')).toEqual({ positions: [3, 6, 9] });
    expect(await store.checkpoint('counting')).toBe(9);
    expect(await store.checkpoint('per-stream')).toBe(9);
    // Later events apply normally, and the tombstone went with the stored checkpoint.
    await events.appendToStream('s-1', [{ type: 'E', data: {} }]);
    await runner.waitFor(10);
    expect(await store.get('per-stream', 's-1')).toEqual({ positions: [10] });
    expect(await store.get('counting', 'all')).toEqual({ positions: range(1, 10) });
    await runner.stop();
  });

  it('write-through: a commit that fails once its documents are stored leaves none remembered, so the retry in the same process applies nothing twice', async () => {
    await appendNine();
    const all = await events.readAll();
    const store = new HotReadStore(await openStore(), new Set());
    const runner = new ProjectionRunner(events, store, projections);
    await runner.applyBatch(all.slice(0, 4));
    expect(await store.getVersioned('counting', 'all')).toEqual({ doc: { positions: range(1, 4) }, position: 4 });
    double.failNext({ command: 'update', collection: '_checkpoints', mode: 'error' });
    await expect(runner.applyBatch(all.slice(4))).rejects.toThrow();
    // The documents of the failed commit are stored: the store, not the memory, answers for them.
    expect(await store.getVersioned('counting', 'all')).toEqual({ doc: { positions: range(1, 9) }, position: 9 });
    await runner.applyBatch(all.slice(4));
    expect(await store.get('counting', 'all')).toEqual({ positions: range(1, 9) });
    expect(await store.get('per-stream', 's-1')).toBeNull();
    expect(await store.get('per-stream', 's-2')).toEqual({ positions: [3, 6, 9] });
    expect(await store.checkpoint('counting')).toBe(9);
  });

  it('without the per-document positions the same replay would apply events twice (the guard is what holds)', async () => {
    await crashAfterDocuments();
    const store = await openStore();
    // The same store with positions dropped both ways, as an adapter without the guard would be.
    const blind: ReadStore = Object.assign(Object.create(store), {
      getVersioned: async (c: string, id: string) => ({ doc: await store.get(c, id), position: 0 }),
      getVersionedMany: async (c: string, ids: string[]) => Promise.all(ids.map(async (id) => ({ doc: await store.get(c, id), position: 0 }))),
      commit: (writes: DocWrite[], cps: Record<string, number>) => store.commit(writes.map(({ position: _, ...w }) => w), cps),
    });
    const runner = new ProjectionRunner(events, blind, [counting]);
    await runner.start();
    await runner.waitFor(9);
    const positions = ((await store.get('counting', 'all'))!.positions as number[]);
    expect(positions).toEqual([...range(1, 9), ...range(5, 9)]);
    await runner.stop();
  });

  it('a crash in the middle of the documents (one collection stored, another not) also resumes exactly once', async () => {
    await appendNine();
    const all = await events.readAll();
    const crashed = new ProjectionRunner(events, await openStore(), projections);
    await crashed.applyBatch(all.slice(0, 2));
    double.failNext({ command: 'update', collection: 'per-stream', mode: 'close' });
    await expect(crashed.applyBatch(all.slice(2))).rejects.toThrow();
    const store = await openStore();
    expect(await store.checkpoint('counting')).toBe(2);

    const runner = new ProjectionRunner(events, store, projections);
    await runner.start();
    await runner.waitFor(9);
    expect(await store.get('counting', 'all')).toEqual({ positions: range(1, 9) });
    expect(await store.get('per-stream', 's-0')).toEqual({ positions: [1, 4, 7] });
    expect(await store.get('per-stream', 's-1')).toBeNull();
    expect(await store.get('per-stream', 's-2')).toEqual({ positions: [3, 6, 9] });
    await runner.stop();
  });
});
