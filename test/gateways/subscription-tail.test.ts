/** SharedTail: the subscriptions of one store share each event's read and decode, and still see exactly the log. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteEventStore } from '../../src/gateways/event-store/sqlite.js';
import { SharedTail } from '../../src/gateways/event-store/subscription.js';
import type { RecordedEvent, Subscription } from '../../src/gateways/event-store/port.js';

const dir = mkdtempSync(path.join(tmpdir(), 'ct-tail-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function take(sub: Subscription, n: number): Promise<RecordedEvent[]> {
  const out: RecordedEvent[] = [];
  for await (const e of sub) {
    out.push(e);
    if (out.length === n) break;
  }
  return out;
}

describe('SharedTail', () => {
  it('hands every subscription the same decoded, frozen event, read from the store once', async () => {
    const store = new SqliteEventStore(path.join(dir, 'shared.db'));
    const subs = Array.from({ length: 9 }, () => store.subscribeToAll({ after: 0 }));
    const got = subs.map((s) => take(s, 30));
    for (let i = 0; i < 3; i++) await Promise.all(Array.from({ length: 10 }, (_, k) => store.appendToStream(`s-${i}-${k}`, [{ type: 'E', data: { i, k, nested: { list: [1] } } }])));
    const all = await Promise.all(got);
    const direct = await store.readAll();
    for (const events of all) {
      expect(events.map((e) => e.position)).toEqual(direct.map((e) => e.position));
      expect(events.map((e) => e.data)).toEqual(direct.map((e) => e.data));
      events.forEach((e, i) => expect(e).toBe(all[0]![i])); // one object for every subscriber
    }
    const e = all[0]![0]!;
    expect(Object.isFrozen(e) && Object.isFrozen(e.data) && Object.isFrozen((e.data as { nested: { list: number[] } }).nested.list)).toBe(true);
    expect(() => ((e.data as { i: number }).i = 99)).toThrow(TypeError);
    // Each event decoded once, not once per subscriber.
    expect(store.tail.decoded).toBe(30);
    await store.close();
  });

  it('serves a page inside the window from memory, reads past it, and a reader behind the window from the store', async () => {
    const log: RecordedEvent[] = Array.from({ length: 40 }, (_, i) => ({ id: `e${i + 1}`, streamId: 's', revision: i, position: i + 1, type: 'E', data: { i }, metadata: {}, time: 0 }));
    let visible = 10;
    const reads: number[] = [];
    const tail = new SharedTail(async (after, max) => {
      reads.push(after);
      return log.filter((e) => e.position > after && e.position <= visible).slice(0, max).map((e) => ({ ...e }));
    }, 16);
    expect((await tail.page(0, 5)).map((e) => e.position)).toEqual([1, 2, 3, 4, 5]);
    expect((await tail.page(2, 5)).map((e) => e.position)).toEqual([3, 4, 5]); // from memory
    expect(reads).toEqual([0]);
    expect((await tail.page(5, 100)).map((e) => e.position)).toEqual([6, 7, 8, 9, 10]);
    expect(reads).toEqual([0, 5]);
    // Nothing new: the next read finds nothing, and events made visible later are read then.
    expect(await tail.page(10, 100)).toEqual([]);
    visible = 30;
    expect((await tail.page(10, 100)).map((e) => e.position)).toEqual(Array.from({ length: 20 }, (_, i) => i + 11));
    // Capacity 16, trimmed once past 20: the window now holds 15..30; a reader at 3 goes to the store, and is not kept.
    const behind = await tail.page(3, 4);
    expect(behind.map((e) => e.position)).toEqual([4, 5, 6, 7]);
    expect(reads.at(-1)).toBe(3);
    const n = reads.length;
    expect((await tail.page(20, 3)).map((e) => e.position)).toEqual([21, 22, 23]);
    expect(reads.length).toBe(n);
  });

  it('shares one read among the pages asked for at the end of the window at once', async () => {
    let calls = 0;
    const tail = new SharedTail(async (after) => {
      calls++;
      await new Promise((r) => setImmediate(r));
      return after === 0 ? [{ id: 'a', streamId: 's', revision: 0, position: 1, type: 'E', data: {}, metadata: {}, time: 0 }] : [];
    });
    const pages = await Promise.all([tail.page(0, 10), tail.page(0, 10), tail.page(0, 10)]);
    expect(calls).toBe(1);
    for (const p of pages) expect(p.map((e) => e.position)).toEqual([1]);
  });
});
