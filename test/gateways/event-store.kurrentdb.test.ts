/**
 * The KurrentDB adapter against the in-process gRPC double (test/support/kurrentdb-double.ts): the
 * port's contract, then the adapter's own logic — error mapping, metadata encoding, id dedupe after
 * lost answers, resubscription after a drop, the server version check. The double is not KurrentDB;
 * `npm run test:engines` runs the contract against a real server (test/engines/).
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { KurrentDbEventStore, atLeast, decodeMetadata, encodeMetadata, eventTime, mergeAppends, normalizeConnectionString, toPosition } from '../../src/gateways/event-store/kurrentdb.js';
import { WrongExpectedRevisionError, type RecordedEvent } from '../../src/gateways/event-store/port.js';
import { KurrentDbDouble } from '../support/kurrentdb-double.js';
import { eventStoreContract } from './event-store.contract.js';

/** A store on its own fresh double; closing the store stops the double. */
async function storeOnDouble(double = new KurrentDbDouble(), options = {}): Promise<KurrentDbEventStore & { double: KurrentDbDouble }> {
  const url = await double.start();
  const store = await KurrentDbEventStore.connect(url, { resubscribeMs: { first: 20, max: 200 }, ...options });
  const close = store.close.bind(store);
  store.close = async () => {
    await close();
    await double.stop();
  };
  return Object.assign(store, { double });
}

eventStoreContract('kurrentdb (gRPC double)', () => storeOnDouble());

async function take(iter: AsyncIterator<RecordedEvent>, n: number, timeoutMs = 5000): Promise<RecordedEvent[]> {
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

const ID1 = '6f1c2a43-79b8-4a40-9a65-0d3ab7f2c101';
const ID2 = '6f1c2a43-79b8-4a40-9a65-0d3ab7f2c102';

describe('KurrentDbEventStore on the gRPC double', () => {
  let store: Awaited<ReturnType<typeof storeOnDouble>>;
  afterEach(async () => {
    await store?.close();
  });

  it('maps a conflict to WrongExpectedRevisionError with the actual revision, on one stream and on several', async () => {
    store = await storeOnDouble();
    await store.appendToStream('a', [{ type: 'A', data: {} }, { type: 'B', data: {} }]);
    await expect(store.appendToStream('a', [{ type: 'C', data: {} }], { expectedRevision: 0 })).rejects.toMatchObject({
      name: 'WrongExpectedRevisionError',
      streamId: 'a',
      expected: 0,
      actual: 1,
    });
    const err = await store
      .appendToStreams([
        { streamId: 'b', events: [{ type: 'X', data: {} }], expectedRevision: 'no_stream' },
        { streamId: 'a', events: [{ type: 'Y', data: {} }], expectedRevision: 'no_stream' },
      ])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WrongExpectedRevisionError);
    expect(err).toMatchObject({ streamId: 'a', expected: 'no_stream', actual: 1 });
    expect(await store.readStream('b')).toEqual([]);
    expect(store.double.calls.appendSession).toBe(1);
  });

  it('stores metadata as string properties on both append paths and decodes it on read', async () => {
    store = await storeOnDouble();
    const metadata = { user: 'asha', n: 7, flags: { vip: true }, list: [1, 'two'] };
    await store.appendToStream('one', [{ type: 'A', data: { x: 1 }, metadata }]);
    await store.appendToStreams([
      { streamId: 'm1', events: [{ type: 'B', data: { y: 2 }, metadata }], expectedRevision: 'no_stream' },
      { streamId: 'm2', events: [{ type: 'C', data: null }], expectedRevision: 'no_stream' },
    ]);
    for (const stream of ['one', 'm1']) {
      const raw = JSON.parse(store.double.log.find((e) => e.streamId === stream)!.metadata.toString('utf8'));
      expect(Object.values(raw).every((v) => typeof v === 'string')).toBe(true);
      expect((await store.readStream(stream))[0]!.metadata).toEqual(metadata);
    }
    expect((await store.readStream('m2'))[0]!.metadata).toEqual({});
    expect(decodeMetadata({ $schema: 'x', plain: 'not json', num: 3 })).toEqual({ plain: 'not json', num: 3 });
    expect(encodeMetadata({ a: undefined })).toBeUndefined();
  });

  it("keeps each event's time in its metadata; an event stored without it (another writer) has the server's", async () => {
    store = await storeOnDouble();
    await store.appendToStream('mine', [{ type: 'A', data: {} }]);
    const raw = JSON.parse(store.double.log.find((e) => e.streamId === 'mine')!.metadata.toString('utf8'));
    expect(Number(raw['telephony.time'])).toBe((await store.readStream('mine'))[0]!.time);
    // The platform's clock, as the embedded log takes it (a test's clock moves event times on both).
    const clocked = await storeOnDouble(new KurrentDbDouble(), { clock: () => 1_795_815_328_397 });
    await clocked.appendToStream('c', [{ type: 'A', data: {} }]);
    expect((await clocked.readStream('c'))[0]!.time).toBe(1_795_815_328_397);
    await clocked.close();
    expect(encodeMetadata(undefined, 1_795_815_328_397)).toEqual({ 'telephony.time': '1795815328397' });
    expect(eventTime({ 'telephony.time': '1795815328397', by: '"me"' }, new Date(1_795_815_328_000))).toBe(1_795_815_328_397);
    expect(eventTime({ by: '"me"' }, new Date(1_795_815_328_000))).toBe(1_795_815_328_000);
    expect(eventTime({ 'telephony.time': 'soon' }, new Date(1_795_815_328_000))).toBe(1_795_815_328_000);
    expect(eventTime(new Uint8Array([1]), new Date(5))).toBe(5);
  });

  it('an append whose answer was lost is found by its ids and not written again', async () => {
    store = await storeOnDouble();
    await store.appendToStream('s', [{ type: 'Start', data: {} }]);
    store.double.loseAnswers(1);
    const r = await store.appendToStream('s', [{ type: 'A', data: {}, id: ID1 }], { expectedRevision: 0 });
    expect(r.nextExpectedRevision).toBe(1);
    expect((await store.readStream('s')).map((e) => e.type)).toEqual(['Start', 'A']);
    expect(store.double.log.filter((e) => e.id === ID1)).toHaveLength(1);

    store.double.loseAnswers(1);
    const many = await store.appendToStreams([
      { streamId: 's', events: [{ type: 'B', data: {}, id: ID2 }], expectedRevision: 1 },
      { streamId: 't', events: [{ type: 'T', data: {} }], expectedRevision: 'no_stream' },
    ]);
    expect(many.map((x) => x.nextExpectedRevision)).toEqual([2, 0]);
    expect(store.double.log.filter((e) => e.id === ID2)).toHaveLength(1);
    expect(await store.readStream('t')).toHaveLength(1);
  });

  it('an append refused before storing is retried, and stored once', async () => {
    store = await storeOnDouble();
    store.double.refuseAppends(2);
    const r = await store.appendToStream('r', [{ type: 'A', data: {} }], { expectedRevision: 'no_stream' });
    expect(r.nextExpectedRevision).toBe(0);
    expect(await store.readStream('r')).toHaveLength(1);
  });

  it('gives up with 503 UNAVAILABLE when the server never confirms, having stored nothing', async () => {
    store = await storeOnDouble(undefined, { appendAttempts: 2 });
    store.double.refuseAppends(5);
    await expect(store.appendToStream('u', [{ type: 'A', data: {} }])).rejects.toMatchObject({ code: 'UNAVAILABLE', status: 503 });
    store.double.refuseAppends(0);
    expect(await store.readStream('u')).toEqual([]);
  });

  it('a re-append of stored ids is a no-op even when the expected revision no longer matches', async () => {
    store = await storeOnDouble();
    await store.appendToStreams([
      { streamId: 'p', events: [{ type: 'A', data: {}, id: ID1 }], expectedRevision: 'no_stream' },
      { streamId: 'q', events: [{ type: 'B', data: {} }], expectedRevision: 'no_stream' },
    ]);
    await store.appendToStream('p', [{ type: 'Later', data: {} }]);
    // A retried provisioning: p's event is there already; q2 is new.
    const r = await store.appendToStreams([
      { streamId: 'p', events: [{ type: 'A', data: {}, id: ID1 }], expectedRevision: 'no_stream' },
      { streamId: 'q2', events: [{ type: 'C', data: {} }], expectedRevision: 'no_stream' },
    ]);
    // KurrentDB answers an idempotent re-append with the revision of the original write.
    expect(r[0]!.nextExpectedRevision).toBeLessThanOrEqual(1);
    expect(r[1]!.nextExpectedRevision).toBe(0);
    expect((await store.readStream('q2'))).toHaveLength(1);
    expect((await store.readStream('p')).map((e) => e.type)).toEqual(['A', 'Later']);
  });

  it('maps ids that are not UUIDs to a stable UUID, so their re-append is a no-op too', async () => {
    store = await storeOnDouble();
    await store.appendToStream('n', [{ type: 'A', data: {}, id: 'call-42:ended' }]);
    await store.appendToStream('n', [{ type: 'A', data: {}, id: 'call-42:ended' }], { expectedRevision: 'no_stream' });
    const events = await store.readStream('n');
    expect(events).toHaveLength(1);
    expect(events[0]!.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('merges a batch naming one stream twice, and refuses before the server what cannot be merged', async () => {
    store = await storeOnDouble();
    await store.appendToStreams([
      { streamId: 'd', events: [{ type: 'A', data: {} }], expectedRevision: 'no_stream' },
      { streamId: 'e', events: [{ type: 'E', data: {} }], expectedRevision: 'no_stream' },
      { streamId: 'd', events: [{ type: 'B', data: {} }], expectedRevision: 0 },
    ]);
    expect((await store.readStream('d')).map((e) => e.type)).toEqual(['A', 'B']);
    const sessions = store.double.calls.appendSession;
    await expect(
      store.appendToStreams([
        { streamId: 'd', events: [{ type: 'C', data: {} }], expectedRevision: 1 },
        { streamId: 'd', events: [{ type: 'D', data: {} }], expectedRevision: 1 },
      ]),
    ).rejects.toMatchObject({ streamId: 'd', expected: 1, actual: 2 });
    expect(() => mergeAppends([
      { streamId: 'x', events: [{ type: 'A', data: {} }], expectedRevision: 'any' },
      { streamId: 'x', events: [{ type: 'B', data: {} }], expectedRevision: 3 },
    ])).toThrow(/named twice/);
    expect(store.double.calls.appendSession).toBe(sessions);
  });

  it('positions are commit positions: sparse, increasing, system events skipped by readAll and the head', async () => {
    store = await storeOnDouble();
    await store.appendToStream('x', [{ type: 'X1', data: { pad: 'a'.repeat(50) } }]);
    store.double.appendSystemEvent('$stats-127.0.0.1:2113', '$statsCollected');
    await store.appendToStream('y', [{ type: 'Y1', data: {} }]);
    const tail = store.double.appendSystemEvent('$settings', '$settings');
    const all = await store.readAll();
    expect(all.map((e) => e.type)).toEqual(['X1', 'Y1']);
    expect(all.map((e) => e.position)).toEqual(store.double.log.filter((e) => !e.type.startsWith('$')).map((e) => e.position));
    expect(all[1]!.position - all[0]!.position).toBeGreaterThan(1);
    expect(await store.headPosition()).toBe(all[1]!.position);
    expect(tail.position).toBeGreaterThan(all[1]!.position);
    expect(await store.readAll({ after: all[0]!.position })).toHaveLength(1);
  });

  it('resubscribes after a dropped subscription from the last delivered event, losing and repeating nothing', async () => {
    store = await storeOnDouble();
    await store.appendToStream('h', [{ type: 'E1', data: {} }, { type: 'E2', data: {} }]);
    const sub = store.subscribeToAll();
    const it = sub[Symbol.asyncIterator]();
    expect((await take(it, 2)).map((e) => e.type)).toEqual(['E1', 'E2']);
    expect(store.double.dropSubscriptions()).toBe(1);
    await store.appendToStream('h', [{ type: 'E3', data: {} }]);
    store.double.dropSubscriptions();
    await store.appendToStream('i', [{ type: 'E4', data: {} }, { type: 'E5', data: {} }]);
    const rest = await take(it, 3);
    expect(rest.map((e) => e.type)).toEqual(['E3', 'E4', 'E5']);
    expect(store.double.calls.subscribe).toBeGreaterThanOrEqual(2);
    const pending = it.next();
    sub.close();
    expect((await pending).done).toBe(true);
  });

  it('refuses a server older than 25.1, naming the version needed', async () => {
    const old = new KurrentDbDouble({ version: '24.10.2', multiStreamAppend: false });
    const url = await old.start();
    try {
      await expect(KurrentDbEventStore.connect(url)).rejects.toThrow(/KurrentDB 25\.1 or newer is required.*24\.10\.2/);
    } finally {
      await old.stop();
    }
  });

  it('accepts the esdb://, kdb:// and +discover forms of the connection string', async () => {
    expect(normalizeConnectionString('esdb://h:2113?tls=false')).toBe('kurrentdb://h:2113?tls=false');
    expect(normalizeConnectionString('kdb+discover://a:2113,b:2113')).toBe('kurrentdb+discover://a:2113,b:2113');
    expect(normalizeConnectionString('kurrentdb://h:2113')).toBe('kurrentdb://h:2113');
    expect(() => normalizeConnectionString('mongodb://h')).toThrow(/EVENTSTORE_URL/);
    const double = new KurrentDbDouble();
    await double.start();
    store = Object.assign(await KurrentDbEventStore.connect(double.connectionString('esdb')), { double });
    const close = store.close.bind(store);
    store.close = async () => {
      await close();
      await double.stop();
    };
    await store.appendToStream('z', [{ type: 'Z', data: {} }]);
    expect(await store.readStream('z')).toHaveLength(1);
  });

  it('converts positions with a range check and compares versions', () => {
    expect(toPosition(12345n)).toBe(12345);
    expect(toPosition(undefined)).toBeUndefined();
    expect(toPosition(0xffffffffffffffffn)).toBeUndefined();
    expect(() => toPosition(2n ** 53n)).toThrow(/2\^53/);
    expect(atLeast('25.1.0.0', '25.1.0')).toBe(true);
    expect(atLeast('26.0.1-rc', '25.1.0')).toBe(true);
    expect(atLeast('25.0.9', '25.1.0')).toBe(false);
    expect(atLeast('unknown', '25.1.0')).toBe(false);
  });
});

// The prefix path (what `npm run test:engines` uses on a shared server): many stores on one double.
describe('stream prefixes keep stores apart on one server', () => {
  const shared = new KurrentDbDouble();
  let url: Promise<string> | null = null;
  let n = 0;
  eventStoreContract('kurrentdb with a stream prefix (gRPC double)', async () => {
    url ??= shared.start();
    return KurrentDbEventStore.connect(await url, { streamPrefix: `run-${n++}-` });
  });
  afterAll(async () => {
    await shared.stop();
  });
});
