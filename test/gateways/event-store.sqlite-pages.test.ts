/**
 * Replay's pages of the embedded log decode to exactly the events the row reader (scanRange) gives,
 * whatever the stream ids and data hold, with the same filters; pages out of order are refused.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteEventStore } from '../../src/gateways/event-store/sqlite.js';
import { PageDecoder, type PageFilter } from '../../src/gateways/event-store/sqlite-pages.js';
import type { RecordedEvent } from '../../src/gateways/event-store/port.js';

const dir = mkdtempSync(path.join(tmpdir(), 'ct-es-pages-'));
let store: SqliteEventStore;

// Separators, quotes, backslashes, non-ASCII and astral characters where a page could trip on them.
const oddIds = ['plain-1', 'call-\x1e\x1fx', 'q"uote\\back', 'zone-Ünïcødé', 'emoji-😀-id', '', 'tab\tnew\nline'];
const oddData = [{ text: 'a\x1eb\x1fc' }, { nested: { list: [1, 2.5, null, true], s: '"\\' } }, { name: 'Zoë 😀 अ' }, {}, [1, 'two']];

beforeAll(async () => {
  store = new SqliteEventStore(path.join(dir, 'events.db'));
  let i = 0;
  for (const id of oddIds) {
    for (const type of ['A', 'Bee', 'AVeryLongEventTypeName']) {
      await store.appendToStream(id, [{ type, data: oddData[i++ % oddData.length] as Record<string, unknown> }]);
    }
  }
});
afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const strip = (e: RecordedEvent) => ({ position: e.position, streamId: e.streamId, type: e.type, data: e.data, time: e.time });

function decodeAll(data: string[] | null, filter: PageFilter, pageSize: number, after = 0, upTo = Number.MAX_SAFE_INTEGER) {
  const decoder = new PageDecoder(filter);
  const out: RecordedEvent[] = [];
  for (const page of store.scanPages(after, upTo, data, pageSize)) decoder.decode(page, (e) => out.push(e));
  return out;
}

describe('SqliteEventStore pages', () => {
  it('decode to the events scanRange reads, filtered alike, across page boundaries', async () => {
    const head = await store.headPosition();
    expect(head).toBe(oddIds.length * 3);
    for (const pageSize of [1, 4, 1000]) {
      // Every event with its data.
      const all = decodeAll(null, { only: null, data: null }, pageSize);
      expect(all.map(strip)).toEqual([...store.scanRange(0, head)].map(strip));
      expect(all.map((e) => e.streamId)).toEqual(oddIds.flatMap((id) => [id, id, id]));
      // Only some types, data of fewer; the page holds data of the types asked for.
      const types = { only: ['A', 'AVeryLongEventTypeName'], data: ['AVeryLongEventTypeName'] };
      const some = decodeAll(['AVeryLongEventTypeName', 'Bee'], { only: new Set(types.only), data: new Set(types.data) }, pageSize);
      expect(some.map(strip)).toEqual([...store.scanRange(0, head, types)].map(strip));
      expect(some.filter((e) => e.type === 'A').every((e) => e.data === null)).toBe(true);
      // A range inside the log.
      expect(decodeAll(null, { only: null, data: null }, pageSize, 5, 11).map((e) => e.position)).toEqual([6, 7, 8, 9, 10, 11]);
    }
  });

  it('refuses a page that does not follow the last one', () => {
    const [first, second] = [...store.scanPages(0, 8, null, 4)];
    const decoder = new PageDecoder();
    const seen: number[] = [];
    decoder.decode(second!, (e) => seen.push(e.position));
    expect(seen).toEqual([5, 6, 7, 8]);
    expect(() => decoder.decode(first!, () => {})).toThrow(/out of order/);
  });
});
