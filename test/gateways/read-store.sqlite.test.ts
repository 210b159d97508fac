import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';
import { SqliteReadStore } from '../../src/gateways/read-store/sqlite.js';
import type { ReadStore } from '../../src/gateways/read-store/port.js';
import { readStoreContract } from './read-store.contract.js';

const dir = mkdtempSync(path.join(tmpdir(), 'ct-rs-'));
let n = 0;
const files = new WeakMap<ReadStore, string>();
afterAll(() => rmSync(dir, { recursive: true, force: true }));

readStoreContract('sqlite', {
  async create(clock) {
    const file = path.join(dir, `read-${n++}.db`);
    const store = new SqliteReadStore(file, clock);
    files.set(store, file);
    return store;
  },
  async reopen(store, clock) {
    const file = files.get(store)!;
    await store.close();
    const again = new SqliteReadStore(file, clock);
    files.set(again, file);
    return again;
  },
});

readStoreContract('sqlite :memory:', { create: async (clock) => new SqliteReadStore(':memory:', clock) });
