/**
 * The MongoDB read store against the in-process wire-protocol double (test/support/mongo-double):
 * the real `mongodb` driver, the adapter's own logic (position guard, tombstones, checkpoint order,
 * TTL and unique-key use, indexes), and the port's contract. What only a real server proves is listed
 * in docs/architecture.md; `npm run test:engines` runs the contract against one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MongoReadStore } from '../../src/gateways/read-store/mongodb.js';
import { HotReadStore } from '../../src/gateways/read-store/hot.js';
import type { ReadStore } from '../../src/gateways/read-store/port.js';
import { MongoDouble } from '../support/mongo-double/server.js';
import { remoteReadSync } from '../../src/projections/read-sync.js';
import type { EventStore } from '../../src/gateways/event-store/port.js';
import { readStoreContract } from './read-store.contract.js';

const double = new MongoDouble();
let n = 0;
const dbs = new WeakMap<ReadStore, string>();
beforeAll(async () => {
  await double.start();
});
afterAll(async () => {
  await double.stop();
});

readStoreContract('mongodb (wire-protocol double)', {
  async create(clock) {
    const dbName = `contract-${n++}`;
    const store = await MongoReadStore.open(double.url(dbName), { clock });
    dbs.set(store, dbName);
    return store;
  },
  async reopen(store, clock) {
    const dbName = dbs.get(store)!;
    await store.close();
    const again = await MongoReadStore.open(double.url(dbName), { clock });
    dbs.set(again, dbName);
    return again;
  },
});

// Hot read models over MongoDB, as the projector's process runs them (the expiring collections stay cold).
const hot = { has: (c: string) => c !== 'idem' && c !== 'locks' } as ReadonlySet<string>;
readStoreContract('hot over mongodb (wire-protocol double)', {
  create: async (clock) => new HotReadStore(await MongoReadStore.open(double.url(`hot-${n++}`), { clock }), hot),
  ownFold: true,
});

describe('MongoReadStore on the double', () => {
  const open = async (dbName = `own-${n++}`, clock = Date.now) => ({ dbName, store: await MongoReadStore.open(double.url(dbName), { clock }) });

  it('stores each document with the position that last wrote it and never replaces a newer one', async () => {
    const { dbName, store } = await open();
    await store.commit([{ collection: 'agents', id: 'a', doc: { v: 1 }, position: 10 }], { agents: 10 });
    expect(await store.getVersioned('agents', 'a')).toEqual({ doc: { v: 1 }, position: 10 });
    // An older write (a replay, or a slower second projector) loses; the commit still succeeds.
    await store.commit([{ collection: 'agents', id: 'a', doc: { v: 0 }, position: 7 }, { collection: 'agents', id: 'b', doc: { v: 2 }, position: 8 }], { agents: 8 });
    expect(await store.getVersioned('agents', 'a')).toEqual({ doc: { v: 1 }, position: 10 });
    expect(await store.get('agents', 'b')).toEqual({ v: 2 });
    // The same position again is also "already applied".
    await store.commit([{ collection: 'agents', id: 'a', doc: { v: 9 }, position: 10 }], {});
    expect(await store.get('agents', 'a')).toEqual({ v: 1 });
    await store.commit([{ collection: 'agents', id: 'a', doc: { v: 3 }, position: 11 }], { agents: 11 });
    expect(await store.getVersioned('agents', 'a')).toEqual({ doc: { v: 3 }, position: 11 });
    expect(double.documents(dbName, 'agents').find((d) => d._id === 'a')).toEqual({ _id: 'a', d: { v: 3 }, p: 11 });
    expect(await store.checkpoint('agents')).toBe(11);
    await store.close();
  });

  it('a delete is a tombstone until its checkpoint is stored, so an older write cannot bring the document back', async () => {
    const { dbName, store } = await open();
    await store.commit([{ collection: 'in-ivr', id: 'c1', doc: { svcId: 1 }, position: 5 }], { 'in-ivr': 5 });
    // The checkpoint write fails: the delete's tombstone stays, the document stays gone.
    double.failNext({ command: 'update', collection: '_checkpoints' });
    await expect(store.commit([{ collection: 'in-ivr', id: 'c1', doc: null, position: 9 }], { 'in-ivr': 9 })).rejects.toThrow();
    expect(double.documents(dbName, 'in-ivr')).toEqual([{ _id: 'c1', p: 9, del: true, x: expect.any(Date) }]);
    expect(await store.get('in-ivr', 'c1')).toBeNull();
    expect(await store.find('in-ivr', { svcId: 1 })).toEqual([]);
    expect(await store.getVersioned('in-ivr', 'c1')).toEqual({ doc: null, position: 9 });
    // A replay of the event that created it is refused by the tombstone's position.
    await store.commit([{ collection: 'in-ivr', id: 'c1', doc: { svcId: 1 }, position: 5 }], {});
    expect(await store.get('in-ivr', 'c1')).toBeNull();
    // Once a commit stores a checkpoint covering it, the tombstone goes.
    await store.commit([{ collection: 'in-ivr', id: 'c1', doc: null, position: 9 }], { 'in-ivr': 9 });
    expect(double.documents(dbName, 'in-ivr')).toEqual([]);
    // And its TTL index would clear one a crash left behind.
    expect(double.indexes(dbName, 'in-ivr').some((i) => i.expireAfterSeconds === 0 && 'x' in i.key)).toBe(true);
    await store.close();
  });

  it('creates an index for every find shape at start, and a TTL index where records expire', async () => {
    const { dbName, store } = await open();
    const keys = (c: string) => double.indexes(dbName, c).map((i) => i.key);
    expect(keys('agents')).toContainEqual({ 'd.svcId': 1, 'd.exists': 1, _id: 1 });
    expect(keys('agents')).toContainEqual({ 'd.svcId': 1, 'd.exists': 1, 'd.number': 1, _id: 1 });
    expect(keys('deliveries')).toContainEqual({ 'd.svcId': 1, 'd.status': 1, 'd.createdAt': -1, _id: 1 });
    expect(keys('queued-callers')).toContainEqual({ 'd.svcId': 1, 'd.since': 1, _id: 1 });
    await store.put('idempotency', 'k', { v: 1 }, { expiresAt: Date.now() + 60_000 });
    expect(double.indexes(dbName, 'idempotency')).toContainEqual({ name: 'x_1', key: { x: 1 }, expireAfterSeconds: 0 });
    // Opening again creates nothing new and fails on nothing.
    const again = await MongoReadStore.open(double.url(dbName));
    expect(keys('agents')).toHaveLength(5);
    await again.close();
    await store.close();
  });

  it('expired records are hidden at once and removed by the server\'s TTL monitor', async () => {
    let now = 1_800_000_000_000;
    const { dbName, store } = await open(undefined, () => now);
    await store.put('idempotency', 'short', { v: 1 }, { expiresAt: now + 1000 });
    await store.put('idempotency', 'long', { v: 2 }, { expiresAt: now + 60_000 });
    now += 1000;
    expect(await store.get('idempotency', 'short')).toBeNull();
    expect(double.documents(dbName, 'idempotency')).toHaveLength(2);
    expect(double.ttlSweep(now, dbName)).toBe(1);
    expect(double.documents(dbName, 'idempotency').map((d) => d._id)).toEqual(['long']);
    await store.close();
  });

  it('serves the queries\' finds from indexes, sorted by the index', async () => {
    const { dbName, store } = await open();
    double.queries.length = 0;
    await store.find('agents', { svcId: 1, exists: true });
    await store.find('deliveries', { svcId: 1 }, { orderBy: { field: 'createdAt', direction: 'desc' }, limit: 10 });
    await store.find('subscribers', { svc_id: 1, agent_id: 2 }, { orderBy: { field: 'agent_id' } });
    await store.find('calls', { ended: false });
    await store.find('services');
    const mine = double.queries.filter((q) => q.ns.startsWith(`${dbName}.`));
    expect(mine).toHaveLength(5);
    for (const q of mine) expect(q.index, `${q.ns} ${q.equality}`).not.toBeNull();
    // A shape nobody declared is a collection scan, and the double says so.
    await store.find('agents', { name: 'x' });
    expect(double.queries.at(-1)!.index).toBeNull();
    await store.close();
  });

  it('serves the wallboard\'s call outcomes of a day and the worker\'s agents from indexes created at start', async () => {
    const { dbName, store } = await open();
    double.queries.length = 0;
    await store.find('call-outcomes', { svcId: 101, day: '2026-11-24' });
    await store.find('agents', { exists: true });
    const mine = double.queries.filter((q) => q.ns.startsWith(`${dbName}.`));
    expect(mine.map((q) => q.ns)).toEqual([`${dbName}.call-outcomes`, `${dbName}.agents`]);
    for (const q of mine) expect(q.index, `${q.ns} ${q.equality}`).not.toBeNull();
    expect(double.indexes(dbName, 'call-outcomes').map((i) => i.key)).toContainEqual({ 'd.svcId': 1, 'd.day': 1, _id: 1 });
    await store.close();
  });

  it('reads every projection\'s checkpoint in one query (read-your-writes polls it on each request)', async () => {
    const { dbName, store } = await open();
    const names = Array.from({ length: 15 }, (_, i) => `p${i}`);
    await store.commit([], Object.fromEntries(names.map((name, i) => [name, 100 + i])));
    double.queries.length = 0;
    expect(await store.lowestCheckpoint(names)).toBe(100);
    const sync = remoteReadSync({ headPosition: async () => 100 } as EventStore, store, names);
    await sync.caughtUp(1000);
    expect(double.queries.filter((q) => q.ns === `${dbName}._checkpoints`)).toHaveLength(2);
    await store.close();
  });

  it('insertIfAbsent is decided by the server\'s unique _id, across two adapters on one database', async () => {
    const dbName = `own-${n++}`;
    const [a, b] = await Promise.all([MongoReadStore.open(double.url(dbName)), MongoReadStore.open(double.url(dbName))]);
    const results = await Promise.all([a, b, a, b].map((s, i) => s.insertIfAbsent('idempotency', 'key', { owner: i }, { expiresAt: Date.now() + 60_000 })));
    expect(results.filter(Boolean)).toHaveLength(1);
    await a.close();
    await b.close();
  });

  it('refuses to start when the server cannot be reached', async () => {
    const other = new MongoDouble();
    await other.start();
    const url = other.url('x');
    await other.stop();
    await expect(MongoReadStore.open(url, { client: { serverSelectionTimeoutMS: 300 } })).rejects.toThrow();
  });
});
