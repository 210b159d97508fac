/**
 * The PostgreSQL event store against the real server: the port's contract (each store on a schema of
 * its own), then what only PostgreSQL shows: positions never passed while an earlier one may still
 * commit, appends of another process waking subscriptions by NOTIFY, group commit, lost answers.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { PostgresEventStore } from '../../src/gateways/event-store/postgres.js';
import type { RecordedEvent } from '../../src/gateways/event-store/port.js';
import { eventStoreContract } from './event-store.contract.js';
import { PG_URL, dropSchemas, freshSchema, onServer, postgresAvailable } from '../support/postgres.js';

const available = await postgresAvailable();
const schemas = new Set<string>();
const open = (schema = freshSchema(), options = {}) => {
  schemas.add(schema);
  return PostgresEventStore.open(PG_URL, { schema, ...options });
};
afterAll(async () => {
  if (available) await dropSchemas(schemas);
});

async function take(iter: AsyncIterator<RecordedEvent>, n: number, timeoutMs = 10_000): Promise<RecordedEvent[]> {
  const out: RecordedEvent[] = [];
  const deadline = Date.now() + timeoutMs;
  while (out.length < n) {
    let timer: NodeJS.Timeout | undefined;
    const next = await Promise.race([
      iter.next(),
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${out.length}/${n} events`)), Math.max(1, deadline - Date.now())))),
    ]).finally(() => clearTimeout(timer));
    if (next.done) break;
    out.push(next.value);
  }
  return out;
}

describe.skipIf(!available)('PostgreSQL event store', () => {
  eventStoreContract('postgres', () => open());

  it('a subscriber never passes a position whose transaction has not committed yet', async () => {
    const schema = freshSchema();
    const store = await open(schema);
    const sub = store.subscribeToAll();
    const it = sub[Symbol.asyncIterator]();
    // Another writer's transaction takes the next position and stays open.
    await onServer(async (c) => {
      await c.query('BEGIN');
      await c.query(`SELECT ${schema}.append_events($1::json)`, [JSON.stringify([[{ s: 'slow', x: 'any', t: Date.now(), ev: [{ i: 'slow-1', y: 'Slow', d: {}, m: null }] }]])]);
      // This process appends meanwhile: it waits for the open transaction and takes the position after it.
      const fast = store.appendToStream('fast', [{ type: 'Fast', data: {} }]);
      const first = it.next();
      const raced = await Promise.race([first.then(() => 'delivered'), new Promise((r) => setTimeout(r, 300, 'waiting'))]);
      expect(raced).toBe('waiting');
      expect(await store.headPosition()).toBe(0);
      await c.query('COMMIT');
      expect((await fast).position).toBe(2);
      const got = [(await first).value as RecordedEvent, ...(await take(it, 1))];
      expect(got.map((e) => [e.type, e.position])).toEqual([
        ['Slow', 1],
        ['Fast', 2],
      ]);
    });
    sub.close();
    await store.close();
  });

  it("another process's appends wake a subscription by NOTIFY, not by the poll", async () => {
    const schema = freshSchema();
    const reader = await open(schema, { pollMs: 600_000 });
    const writer = await open(schema);
    const sub = reader.subscribeToAll();
    const it = sub[Symbol.asyncIterator]();
    // The LISTEN connection is opened with the first subscription: wait until it listens.
    await onServer(async (c) => {
      for (let i = 0; i < 200; i++) {
        const r = await c.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE 'LISTEN %'");
        if (r.rows[0].n > 0) break;
        await new Promise((r) => setTimeout(r, 25));
      }
    });
    const started = Date.now();
    const got = take(it, 3);
    await writer.appendToStream('a', [{ type: 'A1', data: {} }]);
    await writer.appendToStreams([
      { streamId: 'b', events: [{ type: 'B1', data: {} }], expectedRevision: 'no_stream' },
      { streamId: 'a', events: [{ type: 'A2', data: {} }], expectedRevision: 0 },
    ]);
    expect((await got).map((e) => e.type)).toEqual(['A1', 'B1', 'A2']);
    expect(Date.now() - started).toBeLessThan(60_000);
    sub.close();
    await reader.close();
    await writer.close();
  });

  it('a commit whose notification never came is found by the LISTEN connection\'s heartbeat', async () => {
    const schema = freshSchema();
    const reader = await open(schema, { pollMs: 600_000 });
    const sub = reader.subscribeToAll();
    const it = sub[Symbol.asyncIterator]();
    await reader.appendToStream('seen', [{ type: 'Seen', data: {} }]);
    expect((await take(it, 1)).map((e) => e.type)).toEqual(['Seen']);
    // A writer that stores an event as append_events would, minus the NOTIFY (a notification lost).
    await onServer(async (c) => {
      await c.query('BEGIN');
      await c.query(`INSERT INTO ${schema}.events (position, id, stream_id, revision, type, data, metadata, time) VALUES (2, 'quiet-1', 'quiet', 0, 'Quiet', '{}', NULL, 1)`);
      await c.query(`UPDATE ${schema}.log_head SET position = 2`);
      await c.query('COMMIT');
    });
    expect((await take(it, 1, 15_000)).map((e) => e.type)).toEqual(['Quiet']);
    sub.close();
    await reader.close();
  });

  it('appends of one turn are stored as one group, each command checked on its own', async () => {
    const store = await open();
    await store.appendToStream('g', [{ type: 'G0', data: {} }]);
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, (_, i) => store.appendToStream(`s-${i}`, [{ type: 'E', data: { i } }], { expectedRevision: 'no_stream' })).concat([
        store.appendToStream('g', [{ type: 'Lost', data: {} }], { expectedRevision: 5 }),
      ]),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(50);
    expect(results.at(-1)!.status).toBe('rejected');
    const all = await store.readAll();
    expect(all.map((e) => e.position)).toEqual(Array.from({ length: 51 }, (_, i) => i + 1));
    await store.close();
  });

  it('a group of commands on distinct streams (append_plain): a command with one failing expectation writes nothing, the others stand, positions dense', async () => {
    const store = await open();
    for (const s of ['x', 'y', 'z']) await store.appendToStream(s, [{ type: `${s.toUpperCase()}0`, data: {} }]);
    const pool = (store as unknown as { writer: import('pg').Pool }).writer;
    const query = pool.query.bind(pool);
    const sent: string[] = [];
    (pool as { query: unknown }).query = (q: { name?: string }, ...rest: unknown[]) => (sent.push(String(q.name)), (query as (...a: unknown[]) => unknown)(q, ...rest));
    const [a, b, c, d] = await Promise.allSettled([
      // Two streams, the second's expectation wrong: neither is written.
      store.appendToStreams([
        { streamId: 'p', events: [{ type: 'P', data: {} }], expectedRevision: 'no_stream' },
        { streamId: 'x', events: [{ type: 'X1', data: {} }], expectedRevision: 5 },
      ]),
      store.appendToStreams([
        { streamId: 'q', events: [{ type: 'Q1', data: {} }, { type: 'Q2', data: { n: 2 } }], expectedRevision: 'no_stream' },
        { streamId: 'y', events: [{ type: 'Y1', data: {} }], expectedRevision: 'stream_exists' },
      ]),
      // Only asserts its stream's revision (a fence): nothing written, answered with the head.
      store.appendToStreams([{ streamId: 'z', events: [], expectedRevision: 0 }]),
      store.appendToStream('r', [{ type: 'R', data: {} }], { expectedRevision: 'stream_exists' }),
    ]);
    expect(sent.map((n) => n.split('.')[1])).toEqual(['plain']);
    expect(a.status).toBe('rejected');
    expect((a as PromiseRejectedResult).reason).toMatchObject({ name: 'WrongExpectedRevisionError', streamId: 'x', actual: 0 });
    expect(b).toEqual({ status: 'fulfilled', value: [{ nextExpectedRevision: 1, position: 5 }, { nextExpectedRevision: 1, position: 6 }] });
    expect(c).toEqual({ status: 'fulfilled', value: [{ nextExpectedRevision: 0, position: 3 }] });
    expect(d.status).toBe('rejected');
    const all = await store.readAll();
    expect(all.map((ev) => `${ev.position}:${ev.streamId}:${ev.revision}:${ev.type}`)).toEqual(['1:x:0:X0', '2:y:0:Y0', '3:z:0:Z0', '4:q:0:Q1', '5:q:1:Q2', '6:y:1:Y1']);
    expect(await store.readStream('p')).toEqual([]);
    expect(all[4]!.data).toEqual({ n: 2 });
    await store.close();
  });

  it('a command the server refuses fails alone; an id used in another stream is refused', async () => {
    const store = await open();
    const id = '6f1c2a43-79b8-4a40-9a65-0d3ab7f2c0aa';
    await store.appendToStream('x', [{ type: 'X', data: {}, id }]);
    const [dup, ok, nul] = await Promise.allSettled([
      store.appendToStream('y', [{ type: 'Y', data: {}, id }]),
      store.appendToStream('z', [{ type: 'Z', data: { text: 'nul \u0000 inside' } }]),
      // The same id twice in one append: a unique key the server refuses.
      store.appendToStream('w', [{ type: 'W', data: {}, id: 'twice' }, { type: 'W', data: {}, id: 'twice' }]),
    ]);
    expect(dup.status).toBe('rejected');
    expect(ok.status).toBe('fulfilled');
    expect(nul.status).toBe('rejected');
    // PostgreSQL text holds no NUL: it is stored as U+FFFD.
    expect((await store.readStream('z'))[0]!.data).toEqual({ text: 'nul \ufffd inside' });
    expect(await store.readStream('w')).toEqual([]);
    await store.close();
  });

  it("a subscription reads this process's own appends from memory, the same events as the server holds, and another process's in between from the server", async () => {
    const schema = freshSchema();
    const a = await open(schema);
    const b = await open(schema);
    const sub = a.subscribeToAll();
    const it = sub[Symbol.asyncIterator]();
    const got = take(it, 12);
    for (let i = 0; i < 4; i++) {
      await a.appendToStreams([
        { streamId: `a-${i % 2}`, events: [{ type: 'A', data: { i, when: new Date(0), gone: undefined }, metadata: { by: 'a' } }], expectedRevision: 'any' },
        { streamId: 'shared', events: [{ type: 'S', data: { i } }], expectedRevision: 'any' },
      ]);
      await b.appendToStream('shared', [{ type: 'B', data: { i } }]);
    }
    // A retry that is partly stored already: the tail cannot know which were new, and starts over.
    await a.appendToStream('partly', [{ type: 'P', data: {}, id: 'p-1' }]);
    await a.appendToStream('partly', [{ type: 'P', data: {}, id: 'p-1' }, { type: 'P', data: {}, id: 'p-2' }]);
    const events = await got;
    expect(events.map((e) => e.position)).toEqual(Array.from({ length: 14 }, (_, k) => k + 1).slice(0, 12));
    expect(events).toEqual((await a.readAll()).slice(0, 12));
    expect(events[0]!.data).toEqual({ i: 0, when: '1970-01-01T00:00:00.000Z' });
    expect(Object.isFrozen(events[0]!.data)).toBe(true);
    const rest = await take(it, 2);
    expect(rest).toEqual((await a.readAll()).slice(12));
    sub.close();
    await a.close();
    await b.close();
  });

  it("this process's own appends reach its subscriptions from memory, none read back from the server (notifications that come before the answers included)", async () => {
    const store = await open();
    const sub = store.subscribeToAll();
    const it = sub[Symbol.asyncIterator]();
    await store.appendToStream('warm', [{ type: 'W', data: {} }]);
    expect(await take(it, 1)).toHaveLength(1);
    const listener = (store as unknown as { listener: { up: boolean } }).listener;
    for (let i = 0; i < 400 && !listener.up; i++) await new Promise((r) => setTimeout(r, 25));
    expect(listener.up).toBe(true);
    let reads = 0;
    const readAll = store.readAll.bind(store);
    store.readAll = (o) => (reads++, readAll(o));
    const got = take(it, 200);
    // Appends one turn after another: groups overlap on both writer connections.
    const appended: Promise<unknown>[] = [];
    for (let k = 0; k < 200; k++) {
      appended.push(store.appendToStream(`own-${k % 10}`, [{ type: 'E', data: { k } }]));
      await new Promise((r) => setImmediate(r));
    }
    await Promise.all(appended);
    expect((await got).map((e) => e.position)).toEqual(Array.from({ length: 200 }, (_, k) => k + 2));
    expect(reads).toBe(0);
    sub.close();
    await store.close();
  });

  it('stream reads asked in one turn (read together in one query) answer what each asked alone', async () => {
    const store = await open();
    for (let i = 0; i < 4; i++) await store.appendToStreams([0, 1, 2].map((k) => ({ streamId: `r-${k}`, events: [{ type: `E${i}`, data: { i, k } }], expectedRevision: 'any' as const })));
    const asks: [string, { fromRevision?: number; maxCount?: number }][] = [
      ['r-0', {}],
      ['r-1', { fromRevision: 2 }],
      ['r-2', { fromRevision: 1, maxCount: 2 }],
      ['none', {}],
      ['r-0', { fromRevision: 3, maxCount: 5 }],
      ['r-1', { fromRevision: 9 }],
    ];
    const together = await Promise.all(asks.map(([s, o]) => store.readStream(s, o)));
    const alone: unknown[] = [];
    for (const [s, o] of asks) alone.push(await store.readStream(s, o));
    expect(together).toEqual(alone);
    expect(together.map((es) => es.map((e) => `${e.streamId}:${e.revision}`))).toEqual([
      ['r-0:0', 'r-0:1', 'r-0:2', 'r-0:3'],
      ['r-1:2', 'r-1:3'],
      ['r-2:1', 'r-2:2'],
      [],
      ['r-0:3'],
      [],
    ]);
    // Head reads at the same time share queries, and each answers at least what was stored before it was asked.
    const heads = await Promise.all(Array.from({ length: 20 }, () => store.headPosition()));
    expect(new Set(heads)).toEqual(new Set([12]));
    await store.close();
  });

  it('an append whose answer was lost is sent again and stored once', async () => {
    const store = await open();
    // The next append's connection is cut after the server got it: the writer's first query fails as a lost answer would.
    const pool = (store as unknown as { writer: import('pg').Pool }).writer;
    const query = pool.query.bind(pool);
    let cut = 1;
    (pool as { query: unknown }).query = async (...args: Parameters<typeof query>) => {
      const result = await query(...args);
      if (cut-- > 0) throw Object.assign(new Error('Connection terminated unexpectedly'), {});
      return result;
    };
    const r = await store.appendToStream('lost', [{ type: 'L', data: {} }], { expectedRevision: 'no_stream' });
    expect(r).toEqual({ nextExpectedRevision: 0, position: 1 });
    expect(await store.readAll()).toHaveLength(1);
    await store.close();
  });
});
