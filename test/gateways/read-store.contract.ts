/**
 * One contract for every ReadStore adapter: run it with a factory for a fresh, empty store whose
 * clock the suite controls (expiry is tested against it, not against wall time).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ReadStore } from '../../src/gateways/read-store/port.js';

export interface ReadStoreFactory {
  /** A fresh, empty store reading the time from `clock`. */
  create(clock: () => number): Promise<ReadStore>;
  /** Opens the same storage again (a restart), when the adapter is durable. */
  reopen?(store: ReadStore, clock: () => number): Promise<ReadStore>;
  /**
   * A decorator that answers its own projector's fold from memory (HotReadStore): writes of a second
   * projector through the same instance are not its case, so the two-projector checks run on the
   * stores beneath it.
   */
  ownFold?: boolean;
}

export function readStoreContract(name: string, factory: ReadStoreFactory) {
  describe(`ReadStore contract: ${name}`, () => {
    let store: ReadStore;
    let now = 1_700_000_000_000;
    const clock = () => now;
    beforeEach(async () => {
      now = 1_700_000_000_000;
      store = await factory.create(clock);
    });
    afterEach(async () => {
      await store.close();
    });

    const seedAgents = () =>
      store.commit(
        [
          { collection: 'agents', id: 'a1', doc: { name: 'Asha', svcId: 101, free: true, since: 30, tag: null } },
          { collection: 'agents', id: 'a2', doc: { name: 'Bala', svcId: 101, free: false, since: 10, tag: 'x' } },
          { collection: 'agents', id: 'a3', doc: { name: 'Chen', svcId: 101, free: true, since: 20, tag: 'x' } },
          { collection: 'agents', id: 'a4', doc: { name: 'Dev', svcId: 202, free: true, since: 5, tag: null } },
          { collection: 'other', id: 'a1', doc: { name: 'not an agent', svcId: 101, free: true, since: 0 } },
        ],
        {},
      );

    it('reads an unknown document as null, an empty collection as [], a new checkpoint as 0', async () => {
      expect(await store.get('nothing', 'x')).toBeNull();
      expect(await store.find('nothing')).toEqual([]);
      expect(await store.checkpoint('never-ran')).toBe(0);
    });

    it('get returns the committed document by collection and id, nested values intact', async () => {
      const doc = { name: 'Asha', nested: { list: [1, 'two', null], flag: false }, n: 1.5 };
      await store.commit([{ collection: 'c', id: 'k', doc }], {});
      expect(await store.get('c', 'k')).toEqual(doc);
      expect(await store.get('c', 'other')).toBeNull();
      expect(await store.get('d', 'k')).toBeNull();
    });

    it('find without a filter lists a collection ordered by id', async () => {
      await seedAgents();
      expect((await store.find('agents')).map((d) => d.name)).toEqual(['Asha', 'Bala', 'Chen', 'Dev']);
    });

    it('find filters on every field of where: numbers, strings, booleans and null', async () => {
      await seedAgents();
      const names = async (where: Record<string, string | number | boolean | null>) => (await store.find('agents', where)).map((d) => d.name);
      expect(await names({ svcId: 101 })).toEqual(['Asha', 'Bala', 'Chen']);
      expect(await names({ svcId: 101, free: true })).toEqual(['Asha', 'Chen']);
      expect(await names({ free: false })).toEqual(['Bala']);
      expect(await names({ name: 'Dev' })).toEqual(['Dev']);
      expect(await names({ tag: null })).toEqual(['Asha', 'Dev']);
      expect(await names({ tag: 'x', svcId: 101 })).toEqual(['Bala', 'Chen']);
      // A number and its digit string are different values.
      expect(await names({ svcId: '101' })).toEqual([]);
      expect(await names({ svcId: 999 })).toEqual([]);
    });

    it('find keeps booleans apart from the numbers 1 and 0', async () => {
      await store.commit(
        [
          { collection: 'flags', id: 'a', doc: { name: 'bool', v: true } },
          { collection: 'flags', id: 'b', doc: { name: 'one', v: 1 } },
          { collection: 'flags', id: 'c', doc: { name: 'zero', v: 0 } },
          { collection: 'flags', id: 'd', doc: { name: 'false', v: false } },
        ],
        {},
      );
      const names = async (v: boolean | number) => (await store.find('flags', { v })).map((d) => d.name);
      expect(await names(true)).toEqual(['bool']);
      expect(await names(1)).toEqual(['one']);
      expect(await names(false)).toEqual(['false']);
      expect(await names(0)).toEqual(['zero']);
    });

    it('find orders by a field in either direction and limits the result', async () => {
      await seedAgents();
      const asc = await store.find('agents', { svcId: 101 }, { orderBy: { field: 'since' } });
      expect(asc.map((d) => d.since)).toEqual([10, 20, 30]);
      const desc = await store.find('agents', {}, { orderBy: { field: 'since', direction: 'desc' } });
      expect(desc.map((d) => d.since)).toEqual([30, 20, 10, 5]);
      const top = await store.find('agents', { free: true }, { orderBy: { field: 'since' }, limit: 2 });
      expect(top.map((d) => d.name)).toEqual(['Dev', 'Chen']);
      expect(await store.find('agents', {}, { limit: 1 })).toHaveLength(1);
      expect(await store.find('agents', {}, { limit: 0 })).toEqual([]);
    });

    it('commit upserts, replaces whole documents and deletes with null', async () => {
      await store.commit([{ collection: 'c', id: '1', doc: { a: 1, b: 2 } }], {});
      await store.commit(
        [
          { collection: 'c', id: '1', doc: { a: 10 } },
          { collection: 'c', id: '2', doc: { a: 2 } },
        ],
        {},
      );
      expect(await store.get('c', '1')).toEqual({ a: 10 });
      await store.commit([{ collection: 'c', id: '2', doc: null }], {});
      expect(await store.get('c', '2')).toBeNull();
      expect((await store.find('c')).map((d) => d.a)).toEqual([10]);
      // Deleting what does not exist is not an error.
      await store.commit([{ collection: 'c', id: 'never', doc: null }], {});
    });

    it.skipIf(factory.ownFold)("a projector's write replaces only a document written at a lower position, and getVersioned answers that position", async () => {
      expect(await store.getVersioned('c', '1')).toEqual({ doc: null, position: 0 });
      await store.commit([{ collection: 'c', id: '1', doc: { v: 5 }, position: 5 }], {});
      expect(await store.getVersioned('c', '1')).toEqual({ doc: { v: 5 }, position: 5 });
      // Another projector behind this one (two processes on one store): its older write is dropped.
      await store.commit([{ collection: 'c', id: '1', doc: { v: 3 }, position: 3 }], {});
      await store.commit([{ collection: 'c', id: '1', doc: { v: 5, again: true }, position: 5 }], {});
      expect(await store.getVersioned('c', '1')).toEqual({ doc: { v: 5 }, position: 5 });
      await store.commit([{ collection: 'c', id: '1', doc: { v: 8 }, position: 8 }], {});
      expect(await store.get('c', '1')).toEqual({ v: 8 });
      // A write with no position (not a projector's) replaces whatever is stored.
      await store.commit([{ collection: 'c', id: '1', doc: { v: 0 } }], {});
      expect(await store.getVersioned('c', '1')).toEqual({ doc: { v: 0 }, position: 0 });
    });

    it.skipIf(factory.ownFold)("a projector's delete leaves a tombstone with its position, which no older write brings back", async () => {
      await store.commit([{ collection: 'c', id: 't', doc: { v: 1 }, position: 1 }], {});
      await store.commit([{ collection: 'c', id: 't', doc: null, position: 4 }], {});
      expect(await store.get('c', 't')).toBeNull();
      expect(await store.find('c')).toEqual([]);
      expect(await store.getVersioned('c', 't')).toEqual({ doc: null, position: 4 });
      // A projector behind: it recreates the document at 2 and deletes it at 4 again; neither lands.
      await store.commit([{ collection: 'c', id: 't', doc: { v: 2 }, position: 2 }], {});
      expect(await store.get('c', 't')).toBeNull();
      await store.commit([{ collection: 'c', id: 't', doc: null, position: 4 }], {});
      expect(await store.getVersioned('c', 't')).toEqual({ doc: null, position: 4 });
      // A later event creates it anew.
      await store.commit([{ collection: 'c', id: 't', doc: { v: 6 }, position: 6 }], {});
      expect(await store.getVersioned('c', 't')).toEqual({ doc: { v: 6 }, position: 6 });
      // A tombstone of a document never stored still keeps an older write out.
      await store.commit([{ collection: 'c', id: 'never', doc: null, position: 9 }], {});
      await store.commit([{ collection: 'c', id: 'never', doc: { v: 7 }, position: 7 }], {});
      expect(await store.get('c', 'never')).toBeNull();
    });

    it('getVersionedMany answers what getVersioned answers for each id, in the order asked', async () => {
      const odd = 'it\'s "x", é \\ 日本';
      await store.commit(
        [
          { collection: 'c', id: 'a', doc: { v: 1 }, position: 3 },
          { collection: 'c', id: odd, doc: { v: 2 }, position: 4 },
          { collection: 'c', id: 'gone', doc: { v: 3 }, position: 5 },
          { collection: 'other', id: 'b', doc: { v: 4 }, position: 6 },
        ],
        {},
      );
      await store.commit([{ collection: 'c', id: 'gone', doc: null, position: 7 }], {});
      const many = async (collection: string, ids: string[]) => {
        const each = await Promise.all(ids.map((id) => store.getVersioned(collection, id)));
        const all = await store.getVersionedMany(collection, ids);
        expect(all).toEqual(each);
        return all.map((v) => v.doc);
      };
      expect(await many('c', ['nope', odd, 'a', 'gone', 'b', 'a'])).toEqual([null, { v: 2 }, { v: 1 }, null, null, { v: 1 }]);
      // Expiring documents (in a collection no store keeps in memory).
      await store.put('idem', 'short', { v: 5 }, { expiresAt: now + 1000 });
      await store.put('idem', 'forever', { v: 6 });
      expect(await many('idem', ['short', 'forever'])).toEqual([{ v: 5 }, { v: 6 }]);
      now += 1000;
      expect(await many('idem', ['short', 'forever'])).toEqual([null, { v: 6 }]);
      if (!factory.ownFold) expect((await store.getVersionedMany('c', ['a', 'gone'])).map((v) => v.position)).toEqual([3, 7]);
      expect(await store.getVersionedMany('c', [])).toEqual([]);
      expect(await store.getVersionedMany('c', ['a'])).toEqual([await store.getVersioned('c', 'a')]);
      // Many at once, past any statement's parameter limit.
      const big = Array.from({ length: 2500 }, (_, i) => ({ collection: 'big', id: `k${i}`, doc: { i } }));
      await store.commit(big, {});
      const wanted = [...big.map((w) => w.id).reverse(), 'missing'];
      expect((await store.getVersionedMany('big', wanted)).map((v) => v.doc?.i ?? null)).toEqual([...big.map((w) => w.doc.i).reverse(), null]);
    });

    it('commit moves several checkpoints together with the documents', async () => {
      await store.commit([{ collection: 'c', id: '1', doc: { v: 1 } }], { p1: 5, p2: 7 });
      expect(await store.checkpoint('p1')).toBe(5);
      expect(await store.checkpoint('p2')).toBe(7);
      await store.commit([], { p1: 9 });
      expect(await store.checkpoint('p1')).toBe(9);
      expect(await store.checkpoint('p2')).toBe(7);
    });

    it('the lowest checkpoint of several projections: 0 while one never ran', async () => {
      expect(await store.lowestCheckpoint([])).toBe(0);
      await store.commit([], { p1: 5, p2: 7 });
      expect(await store.lowestCheckpoint(['p1', 'p2'])).toBe(5);
      expect(await store.lowestCheckpoint(['p2', 'p2'])).toBe(7);
      expect(await store.lowestCheckpoint(['p1', 'p2', 'never-ran'])).toBe(0);
      await store.commit([], { p1: 9 });
      expect(await store.lowestCheckpoint(['p1', 'p2'])).toBe(7);
    });

    it('a checkpoint never moves back', async () => {
      await store.commit([], { p: 10 });
      await store.commit([{ collection: 'c', id: '1', doc: { v: 1 } }], { p: 4 });
      expect(await store.checkpoint('p')).toBe(10);
      await store.commit([], { p: 11 });
      expect(await store.checkpoint('p')).toBe(11);
    });

    it('a failing commit writes neither its documents nor its checkpoints', async () => {
      await store.commit([{ collection: 'c', id: 'keep', doc: { v: 1 } }], { p: 3 });
      // A document that cannot be stored (a circular structure) fails the whole commit.
      const circular: Record<string, unknown> = { v: 4 };
      circular.self = circular;
      const bad = { collection: 'c', id: 'bad', doc: circular };
      await expect(
        store.commit([{ collection: 'c', id: 'keep', doc: { v: 2 } }, { collection: 'c', id: 'new', doc: { v: 3 } }, bad], { p: 8 }),
      ).rejects.toThrow();
      expect(await store.get('c', 'keep')).toEqual({ v: 1 });
      expect(await store.get('c', 'new')).toBeNull();
      expect(await store.checkpoint('p')).toBe(3);
    });

    it('put writes auxiliary documents, readable by get and find, replacing an earlier one', async () => {
      await store.put('idem', 'k1', { response: 'first' });
      await store.put('idem', 'k1', { response: 'second' });
      expect(await store.get('idem', 'k1')).toEqual({ response: 'second' });
      expect(await store.find('idem', { response: 'second' })).toHaveLength(1);
    });

    it('a document past its expiresAt is gone for get and find', async () => {
      await store.put('idem', 'short', { v: 1 }, { expiresAt: now + 1000 });
      await store.put('idem', 'forever', { v: 2 });
      expect(await store.get('idem', 'short')).toEqual({ v: 1 });
      now += 999;
      expect(await store.get('idem', 'short')).toEqual({ v: 1 });
      now += 1;
      expect(await store.get('idem', 'short')).toBeNull();
      expect((await store.find('idem')).map((d) => d.v)).toEqual([2]);
    });

    it('insertIfAbsent stores only when no live document has the id', async () => {
      expect(await store.insertIfAbsent('locks', 'l', { owner: 'a' }, { expiresAt: now + 100 })).toBe(true);
      expect(await store.insertIfAbsent('locks', 'l', { owner: 'b' }, { expiresAt: now + 100 })).toBe(false);
      expect(await store.get('locks', 'l')).toEqual({ owner: 'a' });
      now += 100;
      // The first one expired: the id is free again.
      expect(await store.insertIfAbsent('locks', 'l', { owner: 'c' })).toBe(true);
      expect(await store.get('locks', 'l')).toEqual({ owner: 'c' });
      // Without expiry it stays taken.
      now += 1_000_000;
      expect(await store.insertIfAbsent('locks', 'l', { owner: 'd' })).toBe(false);
      // A document written by a projection counts as present too.
      await store.commit([{ collection: 'locks', id: 'p', doc: { owner: 'projection' } }], {});
      expect(await store.insertIfAbsent('locks', 'p', { owner: 'e' })).toBe(false);
    });

    it('delete removes a document; deleting a missing one is not an error', async () => {
      await store.put('idem', 'k', { v: 1 });
      await store.delete('idem', 'k');
      expect(await store.get('idem', 'k')).toBeNull();
      await store.delete('idem', 'k');
      expect(await store.insertIfAbsent('idem', 'k', { v: 2 })).toBe(true);
    });

    if (factory.reopen) {
      it('keeps documents and checkpoints across reopening', async () => {
        await store.commit([{ collection: 'c', id: '1', doc: { v: 1 } }], { p: 42 });
        await store.put('idem', 'k', { v: 2 }, { expiresAt: now + 60_000 });
        store = await factory.reopen!(store, clock);
        expect(await store.get('c', '1')).toEqual({ v: 1 });
        expect(await store.get('idem', 'k')).toEqual({ v: 2 });
        expect(await store.checkpoint('p')).toBe(42);
      });
    }
  });
}
