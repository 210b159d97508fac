/** handleCommand: read, fold, decide, append with the expected revision; retry on a conflict. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { handleCommand, handleStreams, type Decider, type DomainEvent } from '../../../src/commands/decider.js';
import { SqliteEventStore } from '../../../src/gateways/event-store/sqlite.js';
import type { EventStore, ExpectedRevision, NewEvent, StreamAppend } from '../../../src/gateways/event-store/port.js';
import { conflict } from '../../../src/domain/errors.js';

type CounterEvent = DomainEvent<'Added', { by: number; total: number }>;
type CounterCommand = { type: 'Add'; by: number; max?: number };
interface CounterState {
  total: number;
}

/** A counter whose decisions depend on state, so deciding on stale state would be visible. */
function counter(): Decider<CounterCommand, CounterState, CounterEvent> & { decisions: number } {
  const d = {
    decisions: 0,
    initialState: () => ({ total: 0 }),
    evolve: (s: CounterState, e: CounterEvent) => ({ total: s.total + e.data.by }),
    decide(c: CounterCommand, s: CounterState): CounterEvent[] {
      d.decisions++;
      if (c.by === 0) return [];
      if (c.max !== undefined && s.total + c.by > c.max) throw conflict(`total would pass ${c.max}`);
      return [{ type: 'Added', data: { by: c.by, total: s.total + c.by } }];
    },
  };
  return d;
}

/** Lets another writer append to the stream just before each of the next `times` appends. */
class RacingStore {
  appends: ExpectedRevision[] = [];
  constructor(
    readonly inner: EventStore,
    private times: number,
  ) {}
  readStream: EventStore['readStream'] = (s, o) => this.inner.readStream(s, o);
  async appendToStream(streamId: string, events: NewEvent[], options: { expectedRevision?: ExpectedRevision } = {}) {
    this.appends.push(options.expectedRevision ?? 'any');
    if (this.times > 0) {
      this.times--;
      await this.inner.appendToStream(streamId, [{ type: 'Added', data: { by: 100, total: -1 } }]);
    }
    return this.inner.appendToStream(streamId, events, options);
  }
  /** Races on the first stream of each multi-stream append. */
  async appendToStreams(appends: StreamAppend[]) {
    this.appends.push(appends[0]!.expectedRevision);
    if (this.times > 0) {
      this.times--;
      await this.inner.appendToStream(appends[0]!.streamId, [{ type: 'Added', data: { by: 100, total: -1 } }]);
    }
    return this.inner.appendToStreams(appends);
  }
}

describe('handleCommand', () => {
  let store: SqliteEventStore;
  beforeEach(() => {
    store = new SqliteEventStore(':memory:');
  });
  afterEach(async () => {
    await store.close();
  });

  const given = async (stream: string, ...by: number[]) => {
    let total = 0;
    for (const b of by) {
      total += b;
      await store.appendToStream(stream, [{ type: 'Added', data: { by: b, total } }]);
    }
  };
  const thenStream = async (stream: string) => (await store.readStream(stream)).map((e) => e.data);

  it('appends the decided events to a new stream, expecting no stream', async () => {
    const racing = new RacingStore(store, 0);
    const r = await handleCommand(racing as unknown as EventStore, 'counter-1', counter(), { type: 'Add', by: 2 });
    expect(racing.appends).toEqual(['no_stream']);
    expect(r).toMatchObject({ events: [{ type: 'Added', data: { by: 2, total: 2 } }], state: { total: 2 }, revision: 0 });
    expect(r.position).toBe(await store.headPosition());
    expect(await thenStream('counter-1')).toEqual([{ by: 2, total: 2 }]);
  });

  it('decides on the folded history and expects the last revision', async () => {
    await given('counter-1', 1, 2);
    const racing = new RacingStore(store, 0);
    const r = await handleCommand(racing as unknown as EventStore, 'counter-1', counter(), { type: 'Add', by: 4 });
    expect(racing.appends).toEqual([1]);
    expect(r.state).toEqual({ total: 7 });
    expect(r.revision).toBe(2);
    expect(await thenStream('counter-1')).toEqual([{ by: 1, total: 1 }, { by: 2, total: 3 }, { by: 4, total: 7 }]);
  });

  it('appends nothing when the decider decides no events, answering the stream position', async () => {
    await given('counter-1', 5);
    await given('other', 1);
    const r = await handleCommand(store, 'counter-1', counter(), { type: 'Add', by: 0 });
    expect(r).toMatchObject({ events: [], state: { total: 5 }, revision: 0, position: 1 });
    expect(await store.headPosition()).toBe(2);
  });

  it('on an expected-revision conflict decides again on fresh state and appends once', async () => {
    await given('counter-1', 1);
    const racing = new RacingStore(store, 2);
    const d = counter();
    const r = await handleCommand(racing as unknown as EventStore, 'counter-1', d, { type: 'Add', by: 3 });
    // Two lost races, then a win: three decisions, each against the revision it read.
    expect(racing.appends).toEqual([0, 1, 2]);
    expect(d.decisions).toBe(3);
    expect(r.state).toEqual({ total: 204 });
    expect((await thenStream('counter-1')).at(-1)).toEqual({ by: 3, total: 204 });
    expect(await store.readStream('counter-1')).toHaveLength(4);
  });

  it('a retry sees what the other writer did and may now refuse', async () => {
    await given('counter-1', 1);
    const racing = new RacingStore(store, 1);
    await expect(handleCommand(racing as unknown as EventStore, 'counter-1', counter(), { type: 'Add', by: 3, max: 50 })).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await store.readStream('counter-1')).toHaveLength(2);
  });

  it('gives up with UNAVAILABLE after maxAttempts conflicts, having appended nothing of its own', async () => {
    const racing = new RacingStore(store, 10);
    await expect(
      handleCommand(racing as unknown as EventStore, 'counter-1', counter(), { type: 'Add', by: 3 }, { maxAttempts: 3 }),
    ).rejects.toMatchObject({ code: 'UNAVAILABLE', status: 503 });
    expect(racing.appends).toHaveLength(3);
    expect((await thenStream('counter-1')).every((d) => (d as { by: number }).by === 100)).toBe(true);
  });

  it('stores metadata and deterministic event ids, so a retried request appends nothing twice', async () => {
    const opts = { metadata: { by: 'user-1' }, eventId: (_e: CounterEvent, i: number) => `7d4b0b7e-1d57-4d7e-9f0e-00000000000${i}` };
    await handleCommand(store, 'counter-1', counter(), { type: 'Add', by: 2 }, opts);
    const [e] = await store.readStream('counter-1');
    expect(e).toMatchObject({ id: '7d4b0b7e-1d57-4d7e-9f0e-000000000000', metadata: { by: 'user-1' } });
    // The retry decides on the new state, but its event id is already stored: nothing is added.
    await handleCommand(store, 'counter-1', counter(), { type: 'Add', by: 2 }, opts);
    expect(await store.readStream('counter-1')).toHaveLength(1);
  });

  it('reads only the events after the cached revision, and never serves a state older than the store', async () => {
    await given('counter-1', 1, 2);
    const reads: (number | undefined)[] = [];
    const spy = { readStream: (id: string, o?: { fromRevision?: number }) => (reads.push(o?.fromRevision), store.readStream(id, o)), appendToStream: store.appendToStream.bind(store) };
    const d = counter();
    await handleCommand(spy as unknown as EventStore, 'counter-1', d, { type: 'Add', by: 4 });
    // Another writer (another process on the same file) appends behind the cache's back.
    await store.appendToStream('counter-1', [{ type: 'Added', data: { by: 10, total: 17 } }]);
    const r = await handleCommand(spy as unknown as EventStore, 'counter-1', d, { type: 'Add', by: 0 });
    expect(r.state).toEqual({ total: 17 });
    expect(reads).toEqual([0, 3]);
  });

  it('appends on the cached state without reading; a cache left behind by another writer is caught by the conflict', async () => {
    await given('counter-1', 1, 2);
    const reads: (number | undefined)[] = [];
    const spy = { readStream: (id: string, o?: { fromRevision?: number }) => (reads.push(o?.fromRevision), store.readStream(id, o)), appendToStream: store.appendToStream.bind(store) };
    const d = counter();
    await handleCommand(spy as unknown as EventStore, 'counter-1', d, { type: 'Add', by: 4 });
    await handleCommand(spy as unknown as EventStore, 'counter-1', d, { type: 'Add', by: 1 });
    expect(reads).toEqual([0]);
    await store.appendToStream('counter-1', [{ type: 'Added', data: { by: 10, total: 18 } }]);
    const r = await handleCommand(spy as unknown as EventStore, 'counter-1', d, { type: 'Add', by: 2 });
    expect(r.state).toEqual({ total: 20 });
    expect(reads).toEqual([0, 4]);
    expect((await thenStream('counter-1')).at(-1)).toEqual({ by: 2, total: 20 });
  });
});

describe('handleCommand: commands of one process on one stream take turns', () => {
  let dir: string;
  let store: SqliteEventStore;
  beforeEach(() => {
    // A file: commits are synced after they are committed, so a turn can hand its state on before it is durable.
    dir = mkdtempSync(path.join(tmpdir(), 'ct-lanes-'));
    store = new SqliteEventStore(path.join(dir, 'events.db'));
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('fifty at once on one stream: none conflicts, each decides once on the state its predecessor committed', async () => {
    const d = counter();
    const results = await Promise.all(Array.from({ length: 50 }, () => handleCommand(store, 'busy', d, { type: 'Add', by: 1 })));
    expect(d.decisions).toBe(50);
    expect(results.map((r) => r.state.total).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect((await store.readStream('busy')).map((e) => (e.data as { total: number }).total)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
  });

  it('an answer without events waits until the state it saw is durable', async () => {
    const d = counter();
    const order: string[] = [];
    const a = handleCommand(store, 'busy', d, { type: 'Add', by: 2 }).then((r) => (order.push('append answered'), r));
    const b = handleCommand(store, 'busy', d, { type: 'Add', by: 0 }).then((r) => (order.push('no-op answered'), r));
    const [, noop] = await Promise.all([a, b]);
    expect(order).toEqual(['append answered', 'no-op answered']);
    expect(noop).toMatchObject({ events: [], state: { total: 2 }, revision: 0 });
  });

  it('a burst on one stream takes two appends: the first command alone, then the fifty that queued behind it together', async () => {
    const d = counter();
    const appends: ExpectedRevision[] = [];
    const spy = { readStream: store.readStream.bind(store), appendToStream: (id: string, e: NewEvent[], o: { expectedRevision?: ExpectedRevision } = {}) => (appends.push(o.expectedRevision ?? 'any'), store.appendToStream(id, e, o)) };
    // Each command decides on the one before: a refusal (past 40) and no-ops among them answer in their place.
    const commands: CounterCommand[] = Array.from({ length: 51 }, (_, i) => (i % 5 === 4 ? { type: 'Add', by: 0 } : { type: 'Add', by: 1, max: 40 }));
    const results = await Promise.allSettled(commands.map((c) => handleCommand(spy as unknown as EventStore, 'busy', d, c)));
    expect(appends).toEqual(['no_stream', 0]);
    const totals = results.map((r) => (r.status === 'fulfilled' ? r.value.state.total : (r.reason as { code: string }).code));
    let total = 0;
    expect(totals).toEqual(commands.map((c) => (c.max !== undefined && total + c.by > c.max ? 'CONFLICT' : (total += c.by))));
    expect((await store.readStream('busy')).map((e) => (e.data as { total: number }).total)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
  });

  it('a turn whose append the store refuses for another reason than a conflict: each command again alone, so only the bad one fails', async () => {
    const d = counter();
    await handleCommand(store, 'busy', d, { type: 'Add', by: 1 });
    const spy = {
      readStream: store.readStream.bind(store),
      appendToStream: (id: string, e: NewEvent[], o?: { expectedRevision?: ExpectedRevision }) =>
        e.some((x) => (x.data as { by: number }).by === 13) ? Promise.reject(new Error('a value the store cannot take')) : store.appendToStream(id, e, o),
    };
    const results = await Promise.allSettled([1, 2, 13, 3].map((by) => handleCommand(spy as unknown as EventStore, 'busy', d, { type: 'Add', by })));
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value.state.total : 'failed'))).toEqual([2, 4, 'failed', 7]);
    expect((await store.readStream('busy')).map((e) => (e.data as { total: number }).total)).toEqual([1, 2, 4, 7]);
  });

  it('a burst of commands that change nothing, queued behind each other, asks the store once between them', async () => {
    const d = counter();
    await handleCommand(store, 'busy', d, { type: 'Add', by: 5 });
    let reads = 0;
    const spy = { readStream: (id: string, o?: { fromRevision?: number }) => (reads++, store.readStream(id, o)), appendToStream: store.appendToStream.bind(store) };
    const burst = (by: number[]) => Promise.all(by.map((b) => handleCommand(spy as unknown as EventStore, 'busy', d, { type: 'Add', by: b })));
    // 49 no-ops behind a change: the change's append, asked after they came, is what they answer on.
    const first = await burst([1, ...Array.from({ length: 49 }, () => 0)]);
    expect(first.map((r) => r.state.total)).toEqual(Array.from({ length: 50 }, () => 6));
    expect(reads).toBeLessThanOrEqual(1);
    // 50 no-ops at once: the first reads (it came after everything this process saw of the store), and
    // so does the second (the first's read was asked as it came); that read, asked after the rest came, serves them.
    const second = await burst(Array.from({ length: 50 }, () => 0));
    expect(second.map((r) => r.state.total)).toEqual(Array.from({ length: 50 }, () => 6));
    expect(reads).toBeLessThanOrEqual(3);
    // One that comes after the last check reads again, and sees another process's append.
    const other = new SqliteEventStore(path.join(dir, 'events.db'));
    await other.appendToStream('busy', [{ type: 'Added', data: { by: 10, total: 16 } }]);
    await other.close();
    expect((await handleCommand(spy as unknown as EventStore, 'busy', d, { type: 'Add', by: 0 })).state.total).toBe(16);
  });

  it('another writer in between still makes a turn decide again, on what that writer stored', async () => {
    const d = counter();
    await handleCommand(store, 'busy', d, { type: 'Add', by: 1 });
    // Another process appends behind this process's back; the two commands queued behind each other then retry.
    const other = new SqliteEventStore(path.join(dir, 'events.db'));
    await other.appendToStream('busy', [{ type: 'Added', data: { by: 10, total: 11 } }]);
    await other.close();
    const [x, y] = await Promise.all([handleCommand(store, 'busy', d, { type: 'Add', by: 1 }), handleCommand(store, 'busy', d, { type: 'Add', by: 1 })]);
    expect([x.state.total, y.state.total]).toEqual([12, 13]);
    expect((await store.readStream('busy')).map((e) => (e.data as { total: number }).total)).toEqual([1, 11, 12, 13]);
  });
});

describe('handleStreams (several streams, one transaction)', () => {
  let store: SqliteEventStore;
  beforeEach(() => {
    store = new SqliteEventStore(':memory:');
  });
  afterEach(async () => {
    await store.close();
  });
  const d = counter();
  /** Moves `by` from stream a to stream b, refusing to go below 0: depends on both states. */
  const transfer = (by: number) => (loaded: { state: CounterState }[]) => {
    const [a, b] = loaded as { state: CounterState }[];
    if (a!.state.total < by) throw conflict('not enough');
    return {
      appends: [
        { streamId: 'a', events: [{ type: 'Added', data: { by: -by, total: a!.state.total - by } }] },
        { streamId: 'b', events: [{ type: 'Added', data: { by, total: b!.state.total + by } }] },
        { streamId: 'log-1', events: [{ type: 'Moved', data: { by } }], expectedRevision: 'no_stream' as const },
      ],
      value: by,
    };
  };
  const reads = [
    { streamId: 'a', decider: d },
    { streamId: 'b', decider: d },
  ];

  it('appends to every stream at once, each against the revision it read', async () => {
    await store.appendToStream('a', [{ type: 'Added', data: { by: 5, total: 5 } }]);
    const racing = new RacingStore(store, 0);
    const r = await handleStreams(racing as unknown as EventStore, reads, transfer(3));
    expect(racing.appends).toEqual([0]);
    expect(r.value).toBe(3);
    expect(r.states).toEqual([{ total: 2 }, { total: 3 }]);
    expect(r.position).toBe(await store.headPosition());
    expect((await store.readStream('log-1')).map((e) => e.type)).toEqual(['Moved']);
  });

  it('on a conflict on one stream decides again on fresh state of all, appending once', async () => {
    await store.appendToStream('a', [{ type: 'Added', data: { by: 5, total: 5 } }]);
    const racing = new RacingStore(store, 2);
    const r = await handleStreams(racing as unknown as EventStore, reads, transfer(3));
    expect(racing.appends).toEqual([0, 1, 2]);
    expect(r.states).toEqual([{ total: 202 }, { total: 3 }]);
    expect(await store.readStream('b')).toHaveLength(1);
    expect(await store.readStream('log-1')).toHaveLength(1);
  });

  it('ends in 503 UNAVAILABLE after the retry budget, having appended nothing of its own to any stream', async () => {
    await store.appendToStream('a', [{ type: 'Added', data: { by: 5, total: 5 } }]);
    const racing = new RacingStore(store, 100);
    await expect(handleStreams(racing as unknown as EventStore, reads, transfer(3), { maxAttempts: 4 })).rejects.toMatchObject({ code: 'UNAVAILABLE', status: 503 });
    expect(racing.appends).toHaveLength(4);
    expect(await store.readStream('b')).toHaveLength(0);
    expect(await store.readStream('log-1')).toHaveLength(0);
  });

  it('the default policy also ends in 503, never a silent give-up', async () => {
    const racing = new RacingStore(store, 1000);
    await expect(handleStreams(racing as unknown as EventStore, reads, transfer(0))).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    await expect(handleCommand(racing as unknown as EventStore, 'a', counter(), { type: 'Add', by: 1 })).rejects.toMatchObject({ code: 'UNAVAILABLE' });
  });

  it('a refusal by the decision is thrown at once, with nothing appended', async () => {
    await expect(handleStreams(store, reads, transfer(3))).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await store.headPosition()).toBe(0);
  });
});
