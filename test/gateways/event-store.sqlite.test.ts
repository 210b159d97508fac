import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { SqliteEventStore } from '../../src/gateways/event-store/sqlite.js';
import { timeOrderedId } from '../../src/gateways/event-store/sqlite-group.js';
import { eventStoreContract } from './event-store.contract.js';
import { buildOnce, type Build } from '../support/build.js';

const dir = mkdtempSync(path.join(tmpdir(), 'ct-es-'));
let n = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Every test but the WAL sync's runs twice: with the group commit on this thread (what the
 * TypeScript sources do) and on the writer thread (what the built code does; the thread runs a
 * build's sqlite-writer.js, since a worker thread cannot load the TypeScript sources).
 */
const modes = ['inline', 'writer thread'] as const;
let build: Build | undefined;
let threadModule: URL | undefined;
beforeAll(() => {
  build = buildOnce('ct-es-writer-');
  threadModule = pathToFileURL(path.join(build.out, 'src/gateways/event-store/sqlite-writer.js'));
  for (const mode of modes) mkdirSync(path.join(dir, mode));
}, 120_000);
afterAll(() => build?.remove());

const opener = (mode: (typeof modes)[number]) => (file: string) =>
  new SqliteEventStore(file, undefined, { writerThread: mode === 'inline' ? null : threadModule! });

/** A log file as versions before chained streams made it (sqlite-layout.ts `indexed`), empty or with rows. */
function indexedLogFile(file: string, rows: [id: string, stream: string, revision: number, type: string][] = []): string {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.exec(`CREATE TABLE events (position INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, stream_id TEXT NOT NULL, revision INTEGER NOT NULL,
    type TEXT NOT NULL, data TEXT NOT NULL, metadata TEXT NOT NULL, time INTEGER NOT NULL, UNIQUE (stream_id, revision));`);
  const insert = db.prepare(`INSERT INTO events (id, stream_id, revision, type, data, metadata, time) VALUES (?, ?, ?, ?, '{}', '{}', 1700000000000)`);
  for (const r of rows) insert.run(...r);
  db.close();
  return file;
}

/** A chained log file as versions before given ids made it: every event id in a unique index, no `given` column. */
function chainedAllIdsLogFile(file: string): string {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.exec(`CREATE TABLE events (position INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, stream_id TEXT NOT NULL, revision INTEGER NOT NULL,
    type TEXT NOT NULL, data TEXT NOT NULL, metadata TEXT NOT NULL, time INTEGER NOT NULL, prev INTEGER);
    CREATE TABLE streams (stream_id TEXT PRIMARY KEY, revision INTEGER NOT NULL, position INTEGER NOT NULL, first INTEGER NOT NULL) WITHOUT ROWID;`);
  db.close();
  return file;
}

for (const mode of modes) {
  const open = opener(mode);

  eventStoreContract(`sqlite (${mode})`, async () => open(path.join(dir, `events-${n++}.db`)));
  eventStoreContract(`sqlite (${mode}), a file made before streams were chained`, async () => open(indexedLogFile(path.join(dir, `events-${n++}.db`))));
  eventStoreContract(`sqlite (${mode}), a chained file made before only given ids were indexed`, async () => open(chainedAllIdsLogFile(path.join(dir, `events-${n++}.db`))));

  describe(`SqliteEventStore (${mode}) durability`, () => {
    it('keeps events across reopening the file', async () => {
      const file = path.join(dir, mode, 'reopen.db');
      const a = open(file);
      await a.appendToStream('s', [{ type: 'A', data: { v: 1 } }]);
      await a.close();
      const b = open(file);
      expect((await b.readStream('s')).map((e) => e.data)).toEqual([{ v: 1 }]);
      expect(await b.headPosition()).toBe(1);
      await b.close();
    });
  });

  describe(`SqliteEventStore (${mode}) group commit`, () => {
    it('stores appends arriving together in one commit, each checked against its own expected revision', async () => {
      const store = open(path.join(dir, mode, 'group.db'));
      await store.appendToStream('a', [{ type: 'A', data: {} }]);
      const before = { ...store.stats };
      const results = await Promise.allSettled(
        Array.from({ length: 20 }, (_, i) =>
          // Every 5th expects a revision the stream does not have: only those fail.
          store.appendToStream(i % 5 === 4 ? 'a' : `s-${i}`, [{ type: 'E', data: { i } }], { expectedRevision: i % 5 === 4 ? 7 : 'no_stream' }),
        ),
      );
      expect(store.stats.commits - before.commits).toBe(1);
      expect(store.stats.appends - before.appends).toBe(20);
      expect(results.filter((r) => r.status === 'rejected')).toHaveLength(4);
      const stored = await store.readAll({ after: 1 });
      expect(stored.map((e) => (e.data as { i: number }).i)).toEqual(Array.from({ length: 20 }, (_, i) => i).filter((i) => i % 5 !== 4));
      // Positions stay gap-free: a failed savepoint leaves no hole.
      expect(stored.map((e) => e.position)).toEqual(Array.from({ length: 16 }, (_, i) => i + 2));
      await store.close();
    });

    it('a command that fails after its first insert is rolled back alone; a refused one stores nothing of any stream', async () => {
      const store = open(path.join(dir, mode, 'group-redo.db'));
      await store.appendToStream('taken', [{ type: 'T', data: {} }]);
      const before = { ...store.stats };
      const [ok1, twiceSameId, refusedPair, sameStreamTwice, ok2] = await Promise.allSettled([
        store.appendToStream('a', [{ type: 'A', data: { n: 1 } }], { expectedRevision: 'no_stream' }),
        // The second insert breaks the unique id after the first went in: only its own rollback may undo it.
        store.appendToStream('b', [
          { type: 'B', data: {}, id: 'dup-id' },
          { type: 'B', data: {}, id: 'dup-id' },
        ]),
        // The second stream conflicts: the first stream's events must not be stored either.
        store.appendToStreams([
          { streamId: 'c1', events: [{ type: 'C', data: {} }], expectedRevision: 'no_stream' },
          { streamId: 'taken', events: [{ type: 'C', data: {} }], expectedRevision: 'no_stream' },
        ]),
        // One stream named twice in one command: the second part sees the first.
        store.appendToStreams([
          { streamId: 'd', events: [{ type: 'D1', data: {} }], expectedRevision: 'no_stream' },
          { streamId: 'd', events: [{ type: 'D2', data: {} }], expectedRevision: 0 },
        ]),
        store.appendToStream('e', [{ type: 'E', data: {} }], { expectedRevision: 'no_stream' }),
      ]);
      expect(store.stats.commits - before.commits).toBe(1);
      expect([ok1.status, twiceSameId.status, refusedPair.status, sameStreamTwice.status, ok2.status]).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled', 'fulfilled']);
      expect(await store.readStream('b')).toEqual([]);
      expect(await store.readStream('c1')).toEqual([]);
      expect((await store.readStream('d')).map((e) => [e.type, e.revision])).toEqual([['D1', 0], ['D2', 1]]);
      const all = await store.readAll({ after: 1 });
      expect(all.map((e) => e.type)).toEqual(['A', 'D1', 'D2', 'E']);
      expect(all.map((e) => e.position)).toEqual([2, 3, 4, 5]);
      // The tail and the file agree on what the group stored.
      const other = open(path.join(dir, mode, 'group-redo.db'));
      expect(await other.readAll({ after: 1 })).toEqual(all);
      await other.close();
      await store.close();
    });

    it('gives events without an id time-ordered ids', async () => {
      const store = open(path.join(dir, mode, 'ids.db'));
      for (let i = 0; i < 3; i++) await store.appendToStream('s', [{ type: 'A', data: { i } }]);
      const ids = (await store.readStream('s')).map((e) => e.id);
      for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      // Ordered by time first: the ids of later appends never sort before earlier ones' millisecond.
      expect(ids.map((id) => id.slice(0, 13))).toEqual([...ids.map((id) => id.slice(0, 13))].sort());
      await store.close();
    });

    it('time-ordered ids of one millisecond are distinct and in the order they were made', () => {
      const made = Array.from({ length: 1000 }, () => timeOrderedId(1_732_500_000_000));
      expect(new Set(made).size).toBe(made.length);
      expect([...made].sort()).toEqual(made);
      expect(made.every((id) => id.startsWith('0193610c-0d00-7'))).toBe(true);
      expect(timeOrderedId(1_732_500_000_001) > made[made.length - 1]!).toBe(true);
    });

    it('answers appends accepted before close, then refuses new ones', async () => {
      const store = open(path.join(dir, mode, 'close.db'));
      const pending = store.appendToStream('s', [{ type: 'A', data: {} }]);
      await store.close();
      await expect(pending).resolves.toMatchObject({ nextExpectedRevision: 0 });
      await expect(store.appendToStream('s', [{ type: 'B', data: {} }])).rejects.toThrow('closed');
      const again = open(path.join(dir, mode, 'close.db'));
      expect(await again.readStream('s')).toHaveLength(1);
      await again.close();
    });
  });

  describe(`SqliteEventStore (${mode}) tail of recent events`, () => {
    it("answers readers from the events it just stored, and reads another process's appends from the file", async () => {
      const file = path.join(dir, mode, 'tail.db');
      const a = open(file);
      const b = open(file);
      const data = { n: 1, nested: { k: 'a' } };
      await a.appendToStreams([{ streamId: 's', events: [{ type: 'A1', data }, { type: 'A2', data: { n: 2 } }], expectedRevision: 'no_stream' }]);
      // The caller's object stays the caller's: changing it changes nothing stored or read.
      data.nested.k = 'changed';
      await b.appendToStream('t', [{ type: 'B1', data: { n: 3 } }]);
      await a.appendToStream('s', [{ type: 'A3', data: { n: 4 }, metadata: { by: 'x' } }]);
      const fromA = await a.readAll();
      expect(fromA.map((e) => [e.position, e.type])).toEqual([[1, 'A1'], [2, 'A2'], [3, 'B1'], [4, 'A3']]);
      expect(fromA[0]!.data).toEqual({ n: 1, nested: { k: 'a' } });
      // Pages from the tail honour `after` and `maxCount` exactly as the file does.
      expect((await a.readAll({ after: 1, maxCount: 1 })).map((e) => e.type)).toEqual(['A2']);
      expect((await a.readAll({ after: 3 })).map((e) => e.type)).toEqual(['A3']);
      expect(await a.readAll({ after: 4 })).toEqual([]);
      // What the tail hands out is what a reader of the file gets.
      const c = open(file);
      expect(await a.readAll({ after: 3 })).toEqual(await c.readAll({ after: 3 }));
      // Shared by every reader of this process: frozen, so no reader can change another's event.
      const shared = (await a.readAll({ after: 3 }))[0]!;
      expect(() => {
        (shared.data as { n: number }).n = 5;
      }).toThrow(TypeError);
      expect(() => {
        shared.metadata.by = 'y';
      }).toThrow(TypeError);
      for (const s of [a, b, c]) await s.close();
    });
  });

  describe(`SqliteEventStore (${mode}) tail: nothing newer, unless another process appended`, () => {
    it("a reader at the tail's end sees another process's later appends, with no append of its own in between", async () => {
      const file = path.join(dir, mode, 'tail-foreign.db');
      const a = open(file);
      const b = open(file);
      await a.appendToStream('s', [{ type: 'A1', data: {} }]);
      expect(await a.readAll({ after: 1 })).toEqual([]);
      // Only another connection's commit can add events after this process's newest: b's must show.
      await b.appendToStream('t', [{ type: 'B1', data: {} }]);
      await b.appendToStream('t', [{ type: 'B2', data: {} }]);
      expect((await a.readAll({ after: 1 })).map((e) => e.type)).toEqual(['B1', 'B2']);
      expect((await a.readAll({ after: 1, maxCount: 1 })).map((e) => e.type)).toEqual(['B1']);
      expect(await a.readAll({ after: 3 })).toEqual([]);
      // Still there for a reader that is behind, however often the end was read meanwhile.
      expect((await a.readAll({ after: 1 })).map((e) => e.type)).toEqual(['B1', 'B2']);
      // This process appends again: the gap starts a new tail, and nothing is skipped.
      await a.appendToStream('s', [{ type: 'A2', data: {} }]);
      expect((await a.readAll({ after: 1 })).map((e) => e.type)).toEqual(['B1', 'B2', 'A2']);
      expect(await a.readAll({ after: 4 })).toEqual([]);
      for (const s of [a, b]) await s.close();
    });
  });

  describe(`SqliteEventStore (${mode}) stream heads kept in memory`, () => {
    it("checks an append against another process's later append to the stream, though it knows the stream's head", async () => {
      const file = path.join(dir, mode, 'heads-foreign.db');
      const a = open(file);
      const b = open(file);
      await a.appendToStream('s', [{ type: 'A1', data: {} }], { expectedRevision: 'no_stream' });
      await a.appendToStream('s', [{ type: 'A2', data: {} }], { expectedRevision: 0 }); // a now knows the head: 1
      await b.appendToStream('s', [{ type: 'B1', data: {} }], { expectedRevision: 1 });
      await expect(a.appendToStream('s', [{ type: 'A3', data: {} }], { expectedRevision: 1 })).rejects.toMatchObject({ name: 'WrongExpectedRevisionError', actual: 2 });
      // A stream a knew as absent, created by b meanwhile.
      await expect(a.appendToStream('t', [{ type: 'A', data: {} }], { expectedRevision: 0 })).rejects.toMatchObject({ actual: -1 });
      await b.appendToStream('t', [{ type: 'B', data: {} }], { expectedRevision: 'no_stream' });
      await expect(a.appendToStream('t', [{ type: 'A', data: {} }], { expectedRevision: 'no_stream' })).rejects.toMatchObject({ actual: 0 });
      const r = await a.appendToStream('s', [{ type: 'A3', data: {} }], { expectedRevision: 2 });
      expect(r).toEqual({ nextExpectedRevision: 3, position: 5 });
      expect((await b.readStream('s')).map((e) => [e.type, e.revision])).toEqual([['A1', 0], ['A2', 1], ['B1', 2], ['A3', 3]]);
      for (const s of [a, b]) await s.close();
    });

    it('keeps no head of an append that was rolled back', async () => {
      const store = open(path.join(dir, mode, 'heads-rollback.db'));
      await store.appendToStream('b', [{ type: 'B0', data: {} }], { expectedRevision: 'no_stream' });
      const [dup, ok] = await Promise.allSettled([
        // Inserts its first event, then fails on the repeated id: its rollback must not leave revision 2 known.
        store.appendToStream('b', [
          { type: 'B1', data: {}, id: 'same' },
          { type: 'B2', data: {}, id: 'same' },
        ]),
        store.appendToStream('c', [{ type: 'C', data: {} }], { expectedRevision: 'no_stream' }),
      ]);
      expect([dup.status, ok.status]).toEqual(['rejected', 'fulfilled']);
      await expect(store.appendToStream('b', [{ type: 'B1', data: {} }], { expectedRevision: 1 })).rejects.toMatchObject({ actual: 0 });
      expect(await store.appendToStream('b', [{ type: 'B1', data: {} }], { expectedRevision: 0 })).toMatchObject({ nextExpectedRevision: 1 });
      await store.close();
    });
  });
}

describe('SqliteEventStore layouts', () => {
  it('makes a new file chained: event rows point back to their stream\'s previous event, one head row per stream', async () => {
    const file = path.join(dir, `chained-${n++}.db`);
    const store = new SqliteEventStore(file);
    expect(store.layout).toBe('chained');
    await store.appendToStream('a', [{ type: 'A0', data: {} }, { type: 'A1', data: {} }]);
    await store.appendToStream('b', [{ type: 'B0', data: {} }]);
    await store.appendToStream('a', [{ type: 'A2', data: {} }]);
    await store.close();
    const db = new Database(file, { readonly: true });
    expect(db.prepare('SELECT position, stream_id, revision, prev FROM events ORDER BY position').all()).toEqual([
      { position: 1, stream_id: 'a', revision: 0, prev: null },
      { position: 2, stream_id: 'a', revision: 1, prev: 1 },
      { position: 3, stream_id: 'b', revision: 0, prev: null },
      { position: 4, stream_id: 'a', revision: 2, prev: 2 },
    ]);
    expect(db.prepare('SELECT * FROM streams ORDER BY stream_id').all()).toEqual([
      { stream_id: 'a', revision: 2, position: 4, first: 1 },
      { stream_id: 'b', revision: 0, position: 3, first: 3 },
    ]);
    // No index on (stream_id, revision): what made every commit write a page per stream.
    expect(db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events'").all()).toEqual([{ name: 'events_given_id' }]);
    db.close();
  });

  it('indexes only the event ids callers gave: a retry with one is still recognised, in its stream or another', async () => {
    const file = path.join(dir, `given-${n++}.db`);
    const store = new SqliteEventStore(file);
    await store.appendToStream('a', [{ type: 'A0', data: {} }, { id: 'given-1', type: 'A1', data: {} }]);
    // The same id again in its stream: nothing appended; in another stream: refused.
    const again = await store.appendToStream('a', [{ id: 'given-1', type: 'A1', data: {} }]);
    expect(again.nextExpectedRevision).toBe(1);
    await expect(store.appendToStream('b', [{ id: 'given-1', type: 'B0', data: {} }])).rejects.toThrow(/already used in stream a/);
    await store.close();
    const db = new Database(file, { readonly: true });
    expect(db.prepare('SELECT id, given FROM events ORDER BY position').all()).toEqual([
      { id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/), given: null },
      { id: 'given-1', given: 1 },
    ]);
    // The lookup a retry makes reads the partial index, not the table.
    const plan = db.prepare("EXPLAIN QUERY PLAN SELECT stream_id FROM events WHERE id = 'given-1' AND given = 1").all() as { detail: string }[];
    expect(plan.map((p) => p.detail).join(' ')).toMatch(/USING INDEX events_given_id/);
    db.close();
  });

  it('keeps a chained file whose every id is indexed as it is', async () => {
    const file = chainedAllIdsLogFile(path.join(dir, `all-ids-${n++}.db`));
    const store = new SqliteEventStore(file);
    expect(store.layout).toBe('chained');
    await store.appendToStream('a', [{ type: 'A0', data: {} }, { id: 'given-1', type: 'A1', data: {} }]);
    await expect(store.appendToStream('b', [{ id: 'given-1', type: 'B0', data: {} }])).rejects.toThrow(/already used in stream a/);
    expect((await store.readStream('a')).map((e) => e.type)).toEqual(['A0', 'A1']);
    await store.close();
    const db = new Database(file, { readonly: true });
    expect(db.prepare('PRAGMA table_info(events)').all().map((c) => (c as { name: string }).name)).not.toContain('given');
    db.close();
  });

  it('keeps a file made before as it is, and goes on with its streams', async () => {
    const file = indexedLogFile(path.join(dir, `indexed-${n++}.db`), [
      ['e1', 'a', 0, 'A0'],
      ['e2', 'b', 0, 'B0'],
      ['e3', 'a', 1, 'A1'],
    ]);
    const store = new SqliteEventStore(file);
    expect(store.layout).toBe('indexed');
    expect((await store.readStream('a')).map((e) => e.type)).toEqual(['A0', 'A1']);
    await expect(store.appendToStream('a', [{ type: 'X', data: {} }], { expectedRevision: 0 })).rejects.toThrow(/expected/i);
    await store.appendToStream('a', [{ type: 'A2', data: {} }], { expectedRevision: 1 });
    expect((await store.readStream('a', { maxCount: 1 })).map((e) => e.type)).toEqual(['A0']);
    expect((await store.readStream('a', { fromRevision: 2 })).map((e) => [e.type, e.position])).toEqual([['A2', 4]]);
    await store.close();
    const db = new Database(file, { readonly: true });
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'streams'").all()).toEqual([]);
    db.close();
  });
});

describe('SqliteEventStore WAL sync off the event loop', () => {
  it('answers an append only once synced; until then its events are neither read back nor counted in the head', async () => {
    const store = new SqliteEventStore(path.join(dir, 'unsynced.db'));
    await store.appendToStream('s', [{ type: 'A', data: {} }]);
    let answered = false;
    const pending = store.appendToStream('s', [{ type: 'B', data: {} }]).then((r) => {
      answered = true;
      return r;
    });
    // The group commits on the next turn of the loop; its sync runs on the thread pool.
    await new Promise((r) => setImmediate(r));
    if (!answered) {
      // Committed, not yet acknowledged: stored, but no reader may act on it.
      expect((await store.readStream('s')).map((e) => e.type)).toEqual(['A']);
      expect((await store.readAll()).map((e) => e.type)).toEqual(['A']);
      // The head is read on a later turn, when the sync may have ended (then the append is answered).
      const head = await store.headPosition();
      expect(head).toBe(answered ? 2 : 1);
    }
    const r = await pending;
    expect(r.position).toBe(2);
    expect((await store.readStream('s')).map((e) => e.type)).toEqual(['A', 'B']);
    expect((await store.readAll()).map((e) => e.type)).toEqual(['A', 'B']);
    expect(await store.headPosition()).toBe(2);
    await store.close();
  });

  it('shares syncs among appends that commit while one runs', async () => {
    const store = new SqliteEventStore(path.join(dir, 'syncs.db'));
    const before = store.stats;
    // 200 appends in 20 turns of the loop: 20 commits, and fewer syncs than appends.
    const all: Promise<unknown>[] = [];
    for (let turn = 0; turn < 20; turn++) {
      for (let i = 0; i < 10; i++) all.push(store.appendToStream(`s-${turn}-${i}`, [{ type: 'E', data: {} }]));
      await new Promise((r) => setImmediate(r));
    }
    await Promise.all(all);
    const after = store.stats;
    expect(after.appends - before.appends).toBe(200);
    expect(after.syncs - before.syncs).toBeGreaterThan(0);
    expect(after.syncs - before.syncs).toBeLessThanOrEqual(after.commits - before.commits);
    await store.close();
  });
});

