/** The hot read store meets the ReadStore contract, answers hot collections from memory, and sees writes made while it loads. */
import { describe, expect, it } from 'vitest';
import { SqliteReadStore } from '../../src/gateways/read-store/sqlite.js';
import { HotReadStore } from '../../src/gateways/read-store/hot.js';
import { readStoreContract } from './read-store.contract.js';

// Every collection hot except the auxiliary ones with expiry (those are never hot in the platform).
const hot = { has: (c: string) => c !== 'idem' && c !== 'locks' } as ReadonlySet<string>;

readStoreContract('hot over sqlite :memory:', { create: async (clock) => new HotReadStore(new SqliteReadStore(':memory:', clock), hot) });

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
});
