import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pathToFileURL } from 'node:url';
import { buildOnce, type Build } from '../support/build.js';
import { SqliteReadStore, TOMBSTONE_KEEP_MS } from '../../src/gateways/read-store/sqlite.js';
import { jsonLater } from '../../src/gateways/read-store/pending-writes.js';
import type { ReadStore } from '../../src/gateways/read-store/port.js';
import { readStoreContract } from './read-store.contract.js';

const dir = mkdtempSync(path.join(tmpdir(), 'ct-rs-'));
let n = 0;
const files = new WeakMap<ReadStore, string>();
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * The contract runs with the writes on this thread (the TypeScript sources, replay's stores) and on
 * the store's writer thread (the platform's read.db in the built code), which runs a build's module:
 * a worker thread cannot load the TypeScript sources.
 */
let build: Build | undefined;
let writerModule: URL | undefined;
beforeAll(() => {
  build = buildOnce('ct-rs-writer-');
  writerModule = pathToFileURL(path.join(build.out, 'src/gateways/read-store/sqlite-writer.js'));
}, 120_000);
afterAll(() => build?.remove());

for (const mode of ['inline', 'writer thread', 'inline, coalescing', 'writer thread, coalescing'] as const) {
  // Coalescing as the platform's read.db does: commits close together are held and stored together.
  const open = (file: string, clock?: () => number) =>
    new SqliteReadStore(file, clock, { writerThread: mode.startsWith('inline') ? false : writerModule!, coalesceMs: mode.endsWith('coalescing') ? 50 : 0 });
  readStoreContract(`sqlite (${mode})`, {
    async create(clock) {
      const file = path.join(dir, `read-${n++}.db`);
      const store = open(file, clock);
      files.set(store, file);
      return store;
    },
    async reopen(store, clock) {
      const file = files.get(store)!;
      await store.close();
      const again = open(file, clock);
      files.set(again, file);
      return again;
    },
  });
}

readStoreContract('sqlite :memory:', { create: async (clock) => new SqliteReadStore(':memory:', clock) });

describe('SqliteReadStore', () => {
  it('opens a file made before documents kept their position: documents stay, positions start', async () => {
    const file = path.join(dir, `old-${n++}.db`);
    const old = new Database(file);
    old.exec(`
      CREATE TABLE docs (collection TEXT NOT NULL, id TEXT NOT NULL, data TEXT NOT NULL, expires_at INTEGER, PRIMARY KEY (collection, id)) WITHOUT ROWID;
      CREATE TABLE checkpoints (name TEXT PRIMARY KEY, position INTEGER NOT NULL) WITHOUT ROWID;
      INSERT INTO docs VALUES ('agents', 'a1', '{"name":"Asha"}', NULL);
      INSERT INTO checkpoints VALUES ('agents', 42);
    `);
    old.close();
    const store = new SqliteReadStore(file);
    expect(await store.getVersioned('agents', 'a1')).toEqual({ doc: { name: 'Asha' }, position: 0 });
    expect(await store.checkpoint('agents')).toBe(42);
    await store.commit([{ collection: 'agents', id: 'a1', doc: { name: 'Asha K' }, position: 43 }], { agents: 43 });
    await store.close();
    const again = new SqliteReadStore(file);
    expect(await again.getVersioned('agents', 'a1')).toEqual({ doc: { name: 'Asha K' }, position: 43 });
    await again.close();
  });

  it('purges tombstones and expired documents a day after, at start', async () => {
    const file = path.join(dir, `purge-${n++}.db`);
    let now = 1_700_000_000_000;
    const store = new SqliteReadStore(file, () => now);
    await store.commit([{ collection: 'c', id: 'gone', doc: null, position: 7 }], {});
    await store.put('c', 'ttl', { v: 1 }, { expiresAt: now + 1000 });
    await store.close();
    const count = () => {
      const db = new Database(file, { readonly: true });
      const { n: rows } = db.prepare('SELECT COUNT(*) AS n FROM docs').get() as { n: number };
      db.close();
      return rows;
    };
    now += TOMBSTONE_KEEP_MS - 1;
    await new SqliteReadStore(file, () => now).close();
    expect(count()).toBe(2);
    now += 2000;
    const later = new SqliteReadStore(file, () => now);
    expect(count()).toBe(0);
    expect(await later.getVersioned('c', 'gone')).toEqual({ doc: null, position: 0 });
    await later.close();
  });
});

describe('SqliteReadStore with coalesceMs', () => {
  /** What another connection (another process, or this one after a crash) finds in the file. */
  const stored = (file: string) => {
    const db = new Database(file, { readonly: true });
    try {
      const docs = db.prepare('SELECT id, data, position FROM docs ORDER BY id').all() as { id: string; data: string; position: number | null }[];
      const checkpoints = db.prepare('SELECT name, position FROM checkpoints ORDER BY name').all() as { name: string; position: number }[];
      return { docs: docs.map((d) => ({ id: d.id, doc: JSON.parse(d.data), position: d.position })), checkpoints };
    } finally {
      db.close();
    }
  };

  for (const mode of ['inline', 'writer thread'] as const) {
    // A window far longer than the test: whatever is stored was stored because something asked for it.
    const open = (file: string) => new SqliteReadStore(file, Date.now, { writerThread: mode === 'inline' ? false : writerModule!, coalesceMs: 600_000 });

    it(`${mode}: stores an idle commit at once, holds the next ones, and reads them through itself at once`, async () => {
      const file = path.join(dir, `coalesce-${n++}.db`);
      const store = open(file);
      await store.commit([{ collection: 'agents', id: 'a1', doc: { v: 1 }, position: 1 }], { agents: 1 });
      expect(stored(file)).toEqual({ docs: [{ id: 'a1', doc: { v: 1 }, position: 1 }], checkpoints: [{ name: 'agents', position: 1 }] });
      await store.commit([{ collection: 'agents', id: 'a1', doc: { v: 2 }, position: 2 }], { agents: 2 });
      await store.commit([{ collection: 'agents', id: 'a2', doc: { v: 3 }, position: 3 }], { agents: 3, other: 3 });
      // Held: the file (another process, or this one after kill -9) still has the first commit only.
      expect(stored(file)).toEqual({ docs: [{ id: 'a1', doc: { v: 1 }, position: 1 }], checkpoints: [{ name: 'agents', position: 1 }] });
      // Through the store they are there; reading a held document answers from it, storing nothing.
      expect(await store.getVersioned('agents', 'a1')).toEqual({ doc: { v: 2 }, position: 2 });
      expect(await store.get('agents', 'a2')).toEqual({ v: 3 });
      expect(await store.getVersionedMany('agents', ['a2', 'none', 'a1'])).toEqual([
        { doc: { v: 3 }, position: 3 },
        { doc: null, position: 0 },
        { doc: { v: 2 }, position: 2 },
      ]);
      expect(stored(file).checkpoints).toEqual([{ name: 'agents', position: 1 }]);
      // A checkpoint read stores them.
      expect(await store.checkpoint('other')).toBe(3);
      expect(stored(file).checkpoints).toEqual([
        { name: 'agents', position: 3 },
        { name: 'other', position: 3 },
      ]);
      await store.commit([{ collection: 'agents', id: 'a2', doc: { v: 4 }, position: 4 }], { agents: 4 });
      expect(await store.find('agents')).toEqual([{ v: 2 }, { v: 4 }]);
      await store.commit([{ collection: 'agents', id: 'a3', doc: { v: 5 }, position: 5 }], { agents: 5 });
      expect(await store.checkpoint('agents')).toBe(5);
      await store.commit([{ collection: 'agents', id: 'a3', doc: null, position: 6 }], { agents: 6 });
      // Closing stores what is held.
      await store.close();
      expect(stored(file)).toEqual({
        docs: [
          { id: 'a1', doc: { v: 2 }, position: 2 },
          { id: 'a2', doc: { v: 4 }, position: 4 },
          { id: 'a3', doc: null, position: 6 },
        ],
        checkpoints: [
          { name: 'agents', position: 6 },
          { name: 'other', position: 3 },
        ],
      });
    });

    it(`${mode}: a read of a held write answers what the file will hold: a tombstone none, a write a newer stored one keeps out the stored one`, async () => {
      const file = path.join(dir, `coalesce-${n++}.db`);
      const store = open(file);
      await store.commit([], { p: 1 });
      await store.commit([{ collection: 'c', id: 'gone', doc: null, position: 2 }], { p: 2 });
      await store.commit([{ collection: 'c', id: 'late', doc: { v: 3 }, position: 3 }], { p: 3 });
      await store.commit([{ collection: 'c', id: 'plain', doc: { v: 4 } }], {});
      expect(await store.getVersioned('c', 'gone')).toEqual({ doc: null, position: 2 });
      expect(await store.get('c', 'gone')).toBeNull();
      expect(await store.getVersioned('c', 'plain')).toEqual({ doc: { v: 4 }, position: 0 });
      expect(stored(file).docs).toEqual([]);
      // Another process stored 'late' at a later position: the held write will not land, the read waits and finds the stored one.
      const other = new Database(file);
      other.prepare(`INSERT INTO docs (collection, id, data, position) VALUES ('c', 'late', '{"v":9}', 9)`).run();
      other.close();
      expect(await store.getVersioned('c', 'late')).toEqual({ doc: { v: 9 }, position: 9 });
      expect(stored(file).docs.map((d) => d.id)).toEqual(['gone', 'late', 'plain']);
      await store.close();
    });

    it(`${mode}: a commit with now is stored before it resolves, after the held writes of its documents`, async () => {
      const file = path.join(dir, `coalesce-${n++}.db`);
      const store = open(file);
      await store.commit([], { p: 1 });
      await store.commit([{ collection: 'c', id: 'x', doc: { v: 1 } }], {});
      await store.commit([{ collection: 'c', id: 'held', doc: { v: 2 }, position: 2 }], { p: 2 });
      await store.commit([{ collection: 'c', id: 'x', doc: { v: 3 } }, { collection: 'c', id: 'y', doc: { v: 4 } }], {}, { now: true });
      expect(stored(file).docs).toEqual([
        { id: 'held', doc: { v: 2 }, position: 2 },
        { id: 'x', doc: { v: 3 }, position: null },
        { id: 'y', doc: { v: 4 }, position: null },
      ]);
      await store.commit([{ collection: 'c', id: 'y', doc: null }], {}, { now: true });
      expect(stored(file).docs.map((d) => d.id)).toEqual(['held', 'x']);
      await store.close();
    });

    it(`${mode}: merged commits end as the same commits stored one by one`, async () => {
      const file = path.join(dir, `coalesce-${n++}.db`);
      const store = open(file);
      await store.commit([], { p: 1 });
      // Held together: a later position wins, an older one does not land over it, a checkpoint never moves back.
      await store.commit([{ collection: 'c', id: 'x', doc: { v: 5 }, position: 5 }], { p: 5 });
      await store.commit([{ collection: 'c', id: 'x', doc: { v: 3 }, position: 3 }], { p: 3 });
      await store.commit([{ collection: 'c', id: 'y', doc: { v: 1 } }], {});
      await store.commit([{ collection: 'c', id: 'y', doc: null }], {});
      // Another process stored a newer z; an unconditional write makes its position NULL, so a
      // projector's write at a lower position lands after it, as it would one by one.
      const other = new Database(file);
      other.prepare(`INSERT INTO docs (collection, id, data, position) VALUES ('c', 'z', '{"v":9}', 9)`).run();
      other.close();
      await store.commit([{ collection: 'c', id: 'z', doc: { v: 0 } }], {});
      await store.commit([{ collection: 'c', id: 'z', doc: { v: 2 }, position: 2 }], {});
      await store.close();
      expect(stored(file)).toEqual({
        docs: [
          { id: 'x', doc: { v: 5 }, position: 5 },
          { id: 'z', doc: { v: 2 }, position: 2 },
        ],
        checkpoints: [{ name: 'p', position: 5 }],
      });
    });
  }

  it('a held document is stored as it was committed: a frozen plain one made JSON when stored, any other at once', async () => {
    const file = path.join(dir, `coalesce-${n++}.db`);
    const store = new SqliteReadStore(file, Date.now, { coalesceMs: 600_000 });
    await store.commit([], { p: 1 });
    const deep = (d: unknown): unknown => {
      if (d && typeof d === 'object') {
        for (const v of Object.values(d)) deep(v);
        Object.freeze(d);
      }
      return d;
    };
    const frozen = deep({ v: 1, list: ['a', 1, true, null], nested: { n: 2, gone: undefined } }) as Record<string, unknown>;
    const open = { v: 2, list: [1] };
    const date = new Date(1_764_000_000_000);
    const withDate = Object.freeze({ v: 3, at: date });
    await store.commit(
      [
        { collection: 'c', id: 'frozen', doc: frozen, position: 2 },
        { collection: 'c', id: 'open', doc: open, position: 2 },
        { collection: 'c', id: 'date', doc: withDate, position: 2 },
      ],
      { p: 2 },
    );
    // Held: the frozen plain document as it is (its JSON made when stored), the others as JSON already.
    const held = (store as unknown as { held: { pending: { rows: Map<string, { data: unknown }> } } }).held.pending.rows;
    expect([...held.values()].map((r) => typeof r.data)).toEqual(['undefined', 'string', 'string']);
    // Changed after the commit (a caller may): what was committed is what is stored.
    open.v = 20;
    open.list.push(2);
    date.setTime(0);
    // A frozen document that cannot be stored still fails its own commit, and nothing of it is held.
    const cycle: Record<string, unknown> = { v: 4 };
    cycle.self = cycle;
    Object.freeze(cycle);
    await expect(store.commit([{ collection: 'c', id: 'bad', doc: cycle, position: 3 }], { p: 3 })).rejects.toThrow();
    await expect(store.commit([{ collection: 'c', id: 'big', doc: Object.freeze({ n: 1n }), position: 3 }], { p: 3 })).rejects.toThrow();
    await store.close();
    expect(stored(file)).toEqual({
      docs: [
        { id: 'date', doc: { v: 3, at: '2025-11-24T16:00:00.000Z' }, position: 2 },
        { id: 'frozen', doc: { v: 1, list: ['a', 1, true, null], nested: { n: 2 } }, position: 2 },
        { id: 'open', doc: { v: 2, list: [1] }, position: 2 },
      ],
      checkpoints: [{ name: 'p', position: 2 }],
    });
  });

  it('jsonLater accepts only documents whose JSON cannot change or fail later', () => {
    const f = <T>(o: T): T => Object.freeze(o);
    expect(jsonLater(f({ a: 1, b: 's', c: true, d: null, e: undefined, g: f([1, f({ h: 2 })]) }))).toBe(true);
    expect(jsonLater({ a: 1 })).toBe(false); // not frozen
    expect(jsonLater(f({ a: { b: 1 } }))).toBe(false); // frozen only on the outside
    expect(jsonLater(f({ a: f(new Date(0)) }))).toBe(false); // toJSON, and a date changes though frozen
    expect(jsonLater(f({ a: 1n }))).toBe(false);
    expect(jsonLater(f({ toJSON: () => 'x' }))).toBe(false);
    expect(jsonLater(f(Object.assign(Object.create(null), { a: 1 })))).toBe(true);
    let deep: Record<string, unknown> = f({});
    for (let i = 0; i < 40; i++) deep = f({ deep });
    expect(jsonLater(deep)).toBe(false); // too deep to check: JSON at once
  });

  it('a window that has passed stores the next commit at once, and a burst within it once the window ends', async () => {
    const file = path.join(dir, `coalesce-${n++}.db`);
    const store = new SqliteReadStore(file, Date.now, { coalesceMs: 30 });
    await store.commit([], { p: 1 });
    for (let i = 2; i <= 20; i++) await store.commit([{ collection: 'c', id: 'x', doc: { v: i }, position: i }], { p: i });
    // Stored by the timer, within a few windows (polled, no fixed sleep).
    const deadline = Date.now() + 5000;
    while (stored(file).checkpoints[0]?.position !== 20) {
      if (Date.now() > deadline) throw new Error(`not stored: ${JSON.stringify(stored(file))}`);
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(stored(file).docs).toEqual([{ id: 'x', doc: { v: 20 }, position: 20 }]);
    await store.close();
  });

  it('a failed store keeps the writes held: the next commit fails with it, and a later one stores them all', async () => {
    const file = path.join(dir, `coalesce-${n++}.db`);
    const store = new SqliteReadStore(file, Date.now, { coalesceMs: 600_000 });
    await store.commit([], { p: 1 });
    await store.commit([{ collection: 'c', id: 'x', doc: { v: 2 }, position: 2 }], { p: 2 });
    // The file refuses the next transaction once (as a full disk would).
    const writes = (store as unknown as { writes: { commit: (...a: unknown[]) => void } }).writes;
    const commit = writes.commit.bind(writes);
    let refuse = 1;
    writes.commit = (...a: unknown[]) => {
      if (refuse-- > 0) throw new Error('disk I/O error');
      commit(...a);
    };
    await expect(store.find('c')).rejects.toThrow('disk I/O error');
    expect(stored(file).checkpoints).toEqual([{ name: 'p', position: 1 }]);
    await store.commit([{ collection: 'c', id: 'y', doc: { v: 3 }, position: 3 }], { p: 3 });
    expect(await store.find('c')).toEqual([{ v: 2 }, { v: 3 }]);
    expect(stored(file)).toEqual({
      docs: [
        { id: 'x', doc: { v: 2 }, position: 2 },
        { id: 'y', doc: { v: 3 }, position: 3 },
      ],
      checkpoints: [{ name: 'p', position: 3 }],
    });
    await store.close();
  });
});
