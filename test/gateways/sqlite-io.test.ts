/** What keeps the embedded stores' writes small: statement journals in memory, event ids in index order. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqlite } from '../../src/gateways/sqlite.js';
import { SqliteEventStore } from '../../src/gateways/event-store/sqlite.js';

const dir = mkdtempSync(path.join(tmpdir(), 'ct-sqlite-io-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('embedded SQLite writes', () => {
  it('keeps temporary data (the savepoints of a group commit) in memory, not in temporary files', () => {
    const db = openSqlite(path.join(dir, 'temp.db'), 'NORMAL');
    expect(db.pragma('temp_store', { simple: true })).toBe(2); // MEMORY
    db.close();
  });

  it('gives events appended without an id ids in the order they were stored', async () => {
    const store = new SqliteEventStore(path.join(dir, 'ids.db'));
    for (let i = 0; i < 5; i++) await Promise.all(Array.from({ length: 20 }, (_, k) => store.appendToStream(`s-${i}-${k}`, [{ type: 'E', data: {} }, { type: 'E', data: {} }])));
    const ids = (await store.readAll()).map((e) => e.id);
    expect(ids).toHaveLength(200);
    expect(new Set(ids).size).toBe(200);
    // Within one millisecond v7 ids are ordered by their random part only: compare by millisecond.
    const ms = ids.map((id) => parseInt(id.replace(/-/g, '').slice(0, 12), 16));
    expect(ms).toEqual([...ms].sort((a, b) => a - b));
    expect(ids.every((id) => /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(id))).toBe(true);
    await store.close();
  });
});
