/** The hot read store meets the ReadStore contract, answers hot collections from memory, and sees writes made while it loads. */
import { describe, expect, it } from 'vitest';
import { SqliteReadStore } from '../../src/gateways/read-store/sqlite.js';
import { HotReadStore, WRITTEN_MAX } from '../../src/gateways/read-store/hot.js';
import type { DocWrite } from '../../src/gateways/read-store/port.js';
import { readStoreContract } from './read-store.contract.js';

// Every collection hot except the auxiliary ones with expiry (those are never hot in the platform).
const hot = { has: (c: string) => c !== 'idem' && c !== 'locks' } as ReadonlySet<string>;

readStoreContract('hot over sqlite :memory:', { create: async (clock) => new HotReadStore(new SqliteReadStore(':memory:', clock), hot), ownFold: true });
readStoreContract('write-through over sqlite :memory: (nothing hot)', { create: async (clock) => new HotReadStore(new SqliteReadStore(':memory:', clock), new Set()), ownFold: true });

describe('HotReadStore', () => {
  it('after loading, answers from memory: writes that bypass it are not seen, writes through it are', async () => {
    const inner = new SqliteReadStore(':memory:');
    const store = new HotReadStore(inner, new Set(['agents']));
    await inner.commit([{ collection: 'agents', id: 'a1', doc: { n: 1 } }], {});
    expect(await store.get('agents', 'a1')).toEqual({ n: 1 });
    await inner.commit([{ collection: 'agents', id: 'a1', doc: { n: 2 } }], {});
    expect(await store.get('agents', 'a1')).toEqual({ n: 1 }); // memory: proof that no query ran
    await store.commit([{ collection: 'agents', id: 'a1', doc: { n: 3 } }, { collection: 'agents', id: 'a2', doc: { n: 4 } }], { agents: 9 });
    expect(await store.find('agents')).toEqual([{ n: 3 }, { n: 4 }]);
    expect(await store.checkpoint('agents')).toBe(9);
    await store.close();
  });

  it('keeps find answers until the collection is written; a caller changing its array changes nothing', async () => {
    const store = new HotReadStore(new SqliteReadStore(':memory:'), new Set(['agents']));
    await store.commit([{ collection: 'agents', id: 'a1', doc: { svc: 1, n: 1 } }, { collection: 'agents', id: 'a2', doc: { svc: 1, n: 2 } }], {});
    const first = await store.find('agents', { svc: 1 });
    first.reverse().pop();
    expect(await store.find('agents', { svc: 1 })).toEqual([{ svc: 1, n: 1 }, { svc: 1, n: 2 }]);
    await store.commit([{ collection: 'agents', id: 'a3', doc: { svc: 1, n: 3 } }, { collection: 'agents', id: 'a1', doc: null }], {});
    expect(await store.find('agents', { svc: 1 })).toEqual([{ svc: 1, n: 2 }, { svc: 1, n: 3 }]);
    expect(await store.find('agents', { svc: 1 }, { limit: 1 })).toEqual([{ svc: 1, n: 2 }]);
    await store.close();
  });

  it('a question with at most one match (answered without ordering or keeping) still honours limit and sees the latest write', async () => {
    const store = new HotReadStore(new SqliteReadStore(':memory:'), new Set(['agents']));
    await store.commit([{ collection: 'agents', id: 'a1', doc: { svc: 1, n: 1 } }, { collection: 'agents', id: 'a2', doc: { svc: 2, n: 2 } }], {});
    const mine = await store.find('agents', { svc: 1 });
    expect(mine).toEqual([{ svc: 1, n: 1 }]);
    mine.pop();
    expect(await store.find('agents', { svc: 1 })).toEqual([{ svc: 1, n: 1 }]);
    expect(await store.find('agents', { svc: 1 }, { limit: 0 })).toEqual([]);
    expect(await store.find('agents', { svc: 1 }, { limit: 1 })).toEqual([{ svc: 1, n: 1 }]);
    expect(await store.find('agents', { svc: 3 })).toEqual([]);
    await store.commit([{ collection: 'agents', id: 'a1', doc: { svc: 1, n: 5 } }], {});
    expect(await store.find('agents', { svc: 1 }, { limit: 1 })).toEqual([{ svc: 1, n: 5 }]);
    await store.commit([{ collection: 'agents', id: 'a3', doc: { svc: 1, n: 0 } }], {});
    expect(await store.find('agents', { svc: 1 }, { orderBy: { field: 'n', direction: 'asc' } })).toEqual([{ svc: 1, n: 0 }, { svc: 1, n: 5 }]);
    await store.close();
  });

  it('find answers from indexes kept current by every write: a changed field moves a document, a delete drops it', async () => {
    const store = new HotReadStore(new SqliteReadStore(':memory:'), new Set(['agents']));
    const doc = (svc: number, number: string | null, exists = true) => ({ svc, number, exists });
    await store.commit([{ collection: 'agents', id: 'a1', doc: doc(1, '100') }, { collection: 'agents', id: 'a2', doc: doc(1, '200') }, { collection: 'agents', id: 'a3', doc: doc(2, '100') }], {});
    const ids = async (where: Record<string, string | number | boolean | null>) => (await store.find<{ svc: number; number: string }>('agents', where)).map((d) => `${d.svc}:${d.number}`);
    expect(await ids({ svc: 1, exists: true, number: '100' })).toEqual(['1:100']); // builds the index on these fields
    expect(await ids({ svc: 1, exists: true })).toEqual(['1:100', '1:200']);
    await store.commit([{ collection: 'agents', id: 'a1', doc: doc(1, '300') }, { collection: 'agents', id: 'a2', doc: null }], {});
    expect(await ids({ svc: 1, exists: true, number: '100' })).toEqual([]);
    expect(await ids({ svc: 1, exists: true, number: '300' })).toEqual(['1:300']);
    expect(await ids({ svc: 1, exists: true })).toEqual(['1:300']);
    await store.commit([{ collection: 'agents', id: 'a2', doc: doc(1, '100', false) }, { collection: 'agents', id: 'a4', doc: { svc: 1, exists: true } }], {});
    expect(await ids({ svc: 1, exists: true, number: '100' })).toEqual([]);
    expect(await ids({ svc: 1, exists: false, number: '100' })).toEqual(['1:100']);
    // null matches a null field and a missing one; types stay apart (1 is not '1', true is not 1).
    expect(await ids({ svc: 1, number: null })).toEqual(['1:undefined']);
    await store.commit([{ collection: 'agents', id: 'a5', doc: doc(1, null) }], {});
    expect(await ids({ svc: 1, number: null })).toEqual(['1:undefined', '1:null']);
    expect(await ids({ svc: '1', number: '300' })).toEqual([]);
    expect(await ids({ svc: 1, exists: 1 })).toEqual([]);
    expect(await ids({ svc: 1, exists: Number.NaN })).toEqual([]);
    await store.close();
  });

  it('find keeps values with separators apart and leaves out documents whose field holds no scalar', async () => {
    const store = new HotReadStore(new SqliteReadStore(':memory:'), new Set(['c']));
    await store.commit(
      [
        { collection: 'c', id: 'x', doc: { a: 'p","sq', b: 'r' } },
        { collection: 'c', id: 'y', doc: { a: 'p', b: 'q","sr' } },
        { collection: 'c', id: 'z', doc: { a: { nested: 1 }, b: 'r' } },
      ],
      {},
    );
    expect((await store.find<{ b: string }>('c', { a: 'p","sq', b: 'r' })).map((d) => d.b)).toEqual(['r']);
    expect((await store.find<{ b: string }>('c', { a: 'p', b: 'q","sr' })).map((d) => d.b)).toEqual(['q","sr']);
    expect(await store.find('c', { b: 'r' })).toHaveLength(2);
    expect(await store.find('c', { a: null })).toEqual([]);
    await store.close();
  });

  it('counts writes per hot collection and answers peek from memory once loaded', async () => {
    const inner = new SqliteReadStore(':memory:');
    const store = new HotReadStore(inner, new Set(['agents', 'users']));
    await inner.commit([{ collection: 'agents', id: 'a1', doc: { n: 1 } }], {});
    expect(store.peek('agents', 'a1')).toBeUndefined(); // not loaded: the caller takes the promise
    expect(store.peek('calls', 'c1')).toBeUndefined(); // not hot
    expect(await store.get('agents', 'a1')).toEqual({ n: 1 });
    expect(store.peek('agents', 'a1')).toEqual({ n: 1 });
    expect(store.peek('agents', 'a2')).toBeNull();
    expect([store.version('agents'), store.version('users')]).toEqual([0, 0]);
    await store.commit([{ collection: 'agents', id: 'a2', doc: { n: 2 } }, { collection: 'agents', id: 'a1', doc: null }, { collection: 'calls', id: 'c1', doc: {} }], {});
    await store.put('users', 'u1', { n: 3 });
    expect([store.version('agents'), store.version('users'), store.version('calls')]).toEqual([2, 1, 0]);
    expect(store.peek('agents', 'a1')).toBeNull();
    expect(store.peek('agents', 'a2')).toEqual({ n: 2 });
    await store.delete('users', 'u1');
    expect(store.version('users')).toBe(2);
    await store.close();
  });

  it('a commit that lands while the collection loads is not lost', async () => {
    const inner = new SqliteReadStore(':memory:');
    await inner.commit([{ collection: 'agents', id: 'a1', doc: { n: 1 } }], {});
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow = Object.assign(Object.create(inner) as SqliteReadStore, {
      scan: async (c: string) => {
        const rows = await inner.scan(c);
        await gate;
        return rows;
      },
    });
    const store = new HotReadStore(slow, new Set(['agents']));
    const reading = store.get('agents', 'a1');
    await store.commit([{ collection: 'agents', id: 'a1', doc: { n: 2 } }], {});
    release();
    expect(await reading).toEqual({ n: 2 });
    expect(await store.get('agents', 'a1')).toEqual({ n: 2 });
    await inner.close();
  });

  it('hands out frozen documents, so no caller can change the model', async () => {
    const store = new HotReadStore(new SqliteReadStore(':memory:'), new Set(['agents']));
    await store.commit([{ collection: 'agents', id: 'a1', doc: { skills: [{ id: 1 }] } }], {});
    const doc = (await store.get<{ skills: { id: number }[] }>('agents', 'a1'))!;
    expect(() => doc.skills.push({ id: 2 })).toThrow(TypeError);
    await store.close();
  });

  it('write-through: the projector\'s last write of a document that is not hot answers getVersioned, with its position, from memory', async () => {
    const inner = new SqliteReadStore(':memory:');
    const store = new HotReadStore(inner, new Set(['agents']));
    await store.commit([{ collection: 'deliveries', id: 'd1', doc: { attempts: [] }, position: 7 }, { collection: 'calls', id: 'c1', doc: null, position: 8 }], { deliveries: 8 });
    await inner.commit([{ collection: 'deliveries', id: 'd1', doc: { attempts: ['bypassed'] } }], {});
    expect(await store.getVersioned('deliveries', 'd1')).toEqual({ doc: { attempts: [] }, position: 7 }); // memory: no query ran
    expect(await store.getVersioned('calls', 'c1')).toEqual({ doc: null, position: 8 }); // a deletion, with its position
    // Frozen: the runner folds on it, and a projection changing it would change what is remembered.
    const { doc } = await store.getVersioned<{ attempts: string[] }>('deliveries', 'd1');
    expect(() => doc!.attempts.push('x')).toThrow(TypeError);
    // Plain reads and finds still ask the store.
    expect(await store.get('deliveries', 'd1')).toEqual({ attempts: ['bypassed'] });
    expect(await store.find('deliveries')).toEqual([{ attempts: ['bypassed'] }]);
    await store.close();
  });

  it('write-through: a write that is not the projector\'s (no position, put, delete, insertIfAbsent) drops the document, and the store answers', async () => {
    const inner = new SqliteReadStore(':memory:');
    const store = new HotReadStore(inner, new Set());
    const remembered = async (id: string) => (await store.getVersioned('x', id)).position > 0;
    await store.commit(['a', 'b', 'c', 'd'].map((id): DocWrite => ({ collection: 'x', id, doc: { id }, position: 1 })), {});
    expect(await Promise.all(['a', 'b', 'c', 'd'].map(remembered))).toEqual([true, true, true, true]);
    await store.commit([{ collection: 'x', id: 'a', doc: { id: 'a2' } }], {});
    await store.put('x', 'b', { id: 'b2' });
    await store.delete('x', 'c');
    await store.delete('x', 'd');
    expect(await store.insertIfAbsent('x', 'd', { id: 'd2' })).toBe(true);
    expect(await Promise.all(['a', 'b', 'c', 'd'].map((id) => store.getVersioned('x', id)))).toEqual([
      { doc: { id: 'a2' }, position: 0 },
      { doc: { id: 'b2' }, position: 0 },
      { doc: null, position: 0 },
      { doc: { id: 'd2' }, position: 0 },
    ]);
    await store.close();
  });

  it('write-through: a commit that fails leaves nothing of it remembered', async () => {
    const inner = new SqliteReadStore(':memory:');
    let fail = false;
    let asked = 0;
    const flaky = Object.assign(Object.create(inner) as SqliteReadStore, {
      getVersioned: (collection: string, id: string) => {
        asked++;
        return inner.getVersioned(collection, id);
      },
      commit: async (writes: DocWrite[], cps: Record<string, number>) => {
        await inner.commit(writes, cps);
        // Stored, then the answer is lost (a store without transactions, a dropped connection).
        if (fail) throw new Error('connection closed');
      },
    });
    const store = new HotReadStore(flaky, new Set());
    await store.commit([{ collection: 'x', id: 'a', doc: { n: 1 }, position: 1 }], {});
    expect(await store.getVersioned('x', 'a')).toEqual({ doc: { n: 1 }, position: 1 });
    expect(asked).toBe(0); // from memory
    fail = true;
    await expect(store.commit([{ collection: 'x', id: 'a', doc: { n: 2 }, position: 2 }], {})).rejects.toThrow('connection closed');
    expect(await store.getVersioned('x', 'a')).toEqual({ doc: { n: 2 }, position: 2 });
    expect(asked).toBe(1); // the store's answer
    await inner.close();
  });

  it('write-through: keeps at most WRITTEN_MAX documents, the least recently written go first', async () => {
    const inner = new SqliteReadStore(':memory:');
    const asked: string[] = [];
    const counting = Object.assign(Object.create(inner) as SqliteReadStore, {
      getVersioned: (collection: string, id: string) => {
        asked.push(id);
        return inner.getVersioned(collection, id);
      },
      getVersionedMany: (collection: string, ids: string[]) => {
        askedMany.push(ids);
        return inner.getVersionedMany(collection, ids);
      },
    });
    const askedMany: string[][] = [];
    const store = new HotReadStore(counting, new Set());
    const writes = Array.from({ length: WRITTEN_MAX + 1 }, (_, i): DocWrite => ({ collection: 'x', id: String(i), doc: { i }, position: i + 1 }));
    await store.commit(writes.slice(0, WRITTEN_MAX), {});
    await store.commit([{ collection: 'x', id: '0', doc: { i: 0, again: true }, position: WRITTEN_MAX + 3 }], {});
    await store.commit(writes.slice(WRITTEN_MAX), {});
    expect((await store.getVersioned('x', '0')).position).toBe(WRITTEN_MAX + 3);
    expect((await store.getVersioned('x', '1')).position).toBe(2);
    expect((await store.getVersioned('x', '2')).position).toBe(3);
    expect(asked).toEqual(['1']); // dropped for the bound, read from the store
    // Many at once: what memory holds from it, the rest from the store in one query.
    expect((await store.getVersionedMany('x', ['2', '1', 'never', '0'])).map((v) => v.position)).toEqual([3, 2, 0, WRITTEN_MAX + 3]);
    expect(askedMany).toEqual([['1', 'never']]);
    await store.close();
  });

  it('a document absent from a hot model is absent without a query when the store commits atomically; otherwise the store answers', async () => {
    const inner = new SqliteReadStore(':memory:');
    const store = new HotReadStore(inner, new Set(['in-ivr']));
    expect(await store.get('in-ivr', 'c2')).toBeNull(); // loaded
    await store.commit([{ collection: 'in-ivr', id: 'c1', doc: { n: 1 }, position: 3 }], {});
    await store.commit([{ collection: 'in-ivr', id: 'c1', doc: null, position: 5 }], {});
    await inner.commit([{ collection: 'in-ivr', id: 'c2', doc: { bypassed: true } }], {});
    expect(await store.getVersioned('in-ivr', 'c1')).toEqual({ doc: null, position: 5 });
    expect(await store.getVersioned('in-ivr', 'c2')).toEqual({ doc: null, position: 0 }); // memory: no query ran
    // A store that may hold tombstones (MongoDB) is asked.
    const tombstones = new HotReadStore(Object.assign(Object.create(inner) as SqliteReadStore, { atomicCommits: false }), new Set(['in-ivr']));
    expect(await tombstones.getVersioned('in-ivr', 'c2')).toEqual({ doc: { bypassed: true }, position: 0 });
    await store.close();
  });
});
