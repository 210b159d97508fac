import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pathToFileURL } from 'node:url';
import { buildOnce, type Build } from '../support/build.js';
import { SqliteReadStore, TOMBSTONE_KEEP_MS } from '../../src/gateways/read-store/sqlite.js';
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

for (const mode of ['inline', 'writer thread'] as const) {
  const open = (file: string, clock?: () => number) => new SqliteReadStore(file, clock, { writerThread: mode === 'inline' ? false : writerModule! });
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
