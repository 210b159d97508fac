import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteEventStore } from '../../src/gateways/event-store/sqlite.js';
import { eventStoreContract } from './event-store.contract.js';

const dir = mkdtempSync(path.join(tmpdir(), 'ct-es-'));
let n = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

eventStoreContract('sqlite', async () => new SqliteEventStore(path.join(dir, `events-${n++}.db`)));

describe('SqliteEventStore durability', () => {
  it('keeps events across reopening the file', async () => {
    const file = path.join(dir, 'reopen.db');
    const a = new SqliteEventStore(file);
    await a.appendToStream('s', [{ type: 'A', data: { v: 1 } }]);
    await a.close();
    const b = new SqliteEventStore(file);
    expect((await b.readStream('s')).map((e) => e.data)).toEqual([{ v: 1 }]);
    expect(await b.headPosition()).toBe(1);
    await b.close();
  });
});
