/**
 * The PostgreSQL read store against the real server: the port's contract (each store on a schema of
 * its own, dropped after), hot read models over it, and what is PostgreSQL's own: the finds' indexes.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { PostgresReadStore } from '../../src/gateways/read-store/postgres.js';
import { findKeys } from '../../src/gateways/read-store/postgres-docs.js';
import { FIND_SHAPES } from '../../src/gateways/read-store/mongodb-indexes.js';
import { HotReadStore } from '../../src/gateways/read-store/hot.js';
import type { ReadStore } from '../../src/gateways/read-store/port.js';
import { readStoreContract } from './read-store.contract.js';
import { PG_URL, dropSchemas, freshSchema, onServer, postgresAvailable } from '../support/postgres.js';

const available = await postgresAvailable();
const schemas = new Set<string>();
const schemaOf = new WeakMap<ReadStore, string>();
async function open(clock: () => number = Date.now, schema = freshSchema(), coalesceMs = 0) {
  schemas.add(schema);
  const store = await PostgresReadStore.open(PG_URL, { schema, clock, coalesceMs });
  schemaOf.set(store, schema);
  return store;
}
afterAll(async () => {
  if (available) await dropSchemas(schemas);
});

describe.skipIf(!available)('PostgreSQL read store', () => {
  readStoreContract('postgres', {
    create: (clock) => open(clock),
    async reopen(store, clock) {
      const schema = schemaOf.get(store)!;
      await store.close();
      return open(clock, schema);
    },
  });

  // Coalescing as the platform's store does: commits close together are held and stored together.
  readStoreContract('postgres, coalescing', {
    create: (clock) => open(clock, freshSchema(), 50),
    async reopen(store, clock) {
      const schema = schemaOf.get(store)!;
      await store.close();
      return open(clock, schema, 50);
    },
  });

  // Hot read models over PostgreSQL, as the projector's process runs them (the expiring collections stay cold).
  const hot = { has: (c: string) => c !== 'idem' && c !== 'locks' } as ReadonlySet<string>;
  readStoreContract('hot over postgres', { create: async (clock) => new HotReadStore(await open(clock), hot), ownFold: true });

  it("serves the queries' finds from the indexes made at start", async () => {
    const store = await open();
    const schema = schemaOf.get(store)!;
    // Enough rows that a scan of the table would cost more than the index.
    const writes = Array.from({ length: 3000 }, (_, i) => ({ collection: 'agents', id: `a${i}`, doc: { svcId: 100 + (i % 50), exists: i % 7 !== 0, number: `+1555${i}` } }));
    writes.push(...Array.from({ length: 2000 }, (_, i) => ({ collection: 'deliveries', id: `d${i}`, doc: { svcId: 100 + (i % 20), status: i % 3 ? 'delivered' : 'failed', createdAt: i } as never })));
    await store.commit(writes, {});
    expect(await store.find('agents', { svcId: 101, exists: true, number: '+15551' })).toEqual([{ svcId: 101, exists: true, number: '+15551' }]);
    const plan = (sql: string) =>
      onServer(async (c) => {
        await c.query(`ANALYZE ${schema}.docs`);
        return (await c.query(`EXPLAIN ${sql}`)).rows.map((r) => r['QUERY PLAN'] as string).join('\n');
      });
    // The finds read the indexed fields from the key column (what the store's own find sends).
    const k = findKeys(FIND_SHAPES).column;
    expect(await plan(`SELECT doc FROM ${schema}.docs WHERE collection = 'agents' AND ${k}->'svcId' = '101' AND ${k}->'exists' = 'true' ORDER BY id`)).toMatch(/Index|Bitmap/);
    const deliveries = await plan(
      `SELECT doc FROM ${schema}.docs WHERE collection = 'deliveries' AND ${k}->'svcId' = '101' AND ${k}->'status' = '"failed"' ORDER BY (${k}->'createdAt') DESC NULLS LAST, id LIMIT 10`,
    );
    expect(deliveries).toMatch(/Index Scan using dk_deliveries_svcid_status_createdat_desc/);
    expect(deliveries).not.toMatch(/Sort/);
    const latest = await store.find('deliveries', { svcId: 101, status: 'failed' }, { orderBy: { field: 'createdAt', direction: 'desc' }, limit: 2 });
    expect(latest.map((d) => d.createdAt)).toEqual([1941, 1881]);
    await store.close();
  });

  it('takes over a schema an older version made: its indexes on doc dropped, the key column filled for the documents there', async () => {
    const schema = freshSchema();
    schemas.add(schema);
    await onServer(async (c) => {
      await c.query(`CREATE SCHEMA ${schema}`);
      await c.query(`CREATE TABLE ${schema}.docs (collection text COLLATE "C" NOT NULL, id text COLLATE "C" NOT NULL, doc jsonb NOT NULL, expires_at bigint, position bigint, PRIMARY KEY (collection, id))`);
      await c.query(`CREATE INDEX docs_agents_svcid_exists ON ${schema}.docs ((doc->'svcId'), (doc->'exists'), id) WHERE collection = 'agents'`);
      await c.query(`INSERT INTO ${schema}.docs (collection, id, doc) VALUES ('agents', 'a1', '{"svcId": 101, "exists": true, "name": "x"}'), ('agents', 'a2', '{"svcId": 101, "name": "y"}'), ('agents', 'a3', '{"svcId": 101, "exists": null}')`);
    });
    const store = await open(Date.now, schema);
    const indexes = await onServer(async (c) => (await c.query(`SELECT indexname FROM pg_indexes WHERE schemaname = '${schema}' AND tablename = 'docs'`)).rows.map((r) => r.indexname as string));
    expect(indexes).not.toContain('docs_agents_svcid_exists');
    expect(indexes).toContain('dk_agents_svcid_exists');
    expect(await store.find('agents', { svcId: 101, exists: true })).toEqual([{ svcId: 101, exists: true, name: 'x' }]);
    // Missing and JSON null alike match null, as on doc.
    expect(await store.find('agents', { svcId: 101, exists: null })).toEqual([{ svcId: 101, name: 'y' }, { svcId: 101, exists: null }]);
    await store.close();
    // Opened again: nothing to change.
    await (await open(Date.now, schema)).close();
  });

  it('stores a NUL character as U+FFFD instead of failing the commit', async () => {
    const store = await open();
    await store.commit([{ collection: 'agents', id: 'a\u0000', doc: { name: 'x\u0000y', list: ['\\u0000'] } }], { p: 1 });
    expect(await store.get('agents', 'a\u0000')).toEqual({ name: 'x\ufffdy', list: ['\\u0000'] });
    expect(await store.checkpoint('p')).toBe(1);
    await store.close();
  });

  describe('with coalesceMs', () => {
    /** What another connection (another process, or this one after a crash) finds in the schema. */
    const stored = (schema: string) =>
      onServer(async (c) => ({
        docs: (await c.query(`SELECT id, doc, position FROM ${schema}.docs ORDER BY id`)).rows.map((r) => ({ id: r.id as string, doc: r.doc as unknown, position: r.position === null ? null : Number(r.position) })),
        checkpoints: (await c.query(`SELECT name, position FROM ${schema}.checkpoints ORDER BY name`)).rows.map((r) => ({ name: r.name as string, position: Number(r.position) })),
      }));

    it('stores an idle commit at once, holds the next ones, reads them through itself at once, stores them on close', async () => {
      // A window far longer than the test: whatever is stored was stored because something asked for it.
      const schema = freshSchema();
      const store = await open(Date.now, schema, 600_000);
      await store.commit([{ collection: 'agents', id: 'a1', doc: { v: 1 }, position: 1 }], { agents: 1 });
      expect(await stored(schema)).toEqual({ docs: [{ id: 'a1', doc: { v: 1 }, position: 1 }], checkpoints: [{ name: 'agents', position: 1 }] });
      await store.commit([{ collection: 'agents', id: 'a1', doc: { v: 2 }, position: 2 }], { agents: 2 });
      await store.commit([{ collection: 'agents', id: 'a2', doc: { v: 3 }, position: 3 }], { agents: 3, other: 3 });
      // Held: another connection still finds the first commit only.
      expect(await stored(schema)).toEqual({ docs: [{ id: 'a1', doc: { v: 1 }, position: 1 }], checkpoints: [{ name: 'agents', position: 1 }] });
      // Through the store they are there, and reading them stored them.
      expect(await store.getVersioned('agents', 'a1')).toEqual({ doc: { v: 2 }, position: 2 });
      expect((await stored(schema)).checkpoints).toEqual([
        { name: 'agents', position: 3 },
        { name: 'other', position: 3 },
      ]);
      await store.commit([{ collection: 'agents', id: 'a2', doc: { v: 4 }, position: 4 }], { agents: 4 });
      expect(await store.find('agents')).toEqual([{ v: 2 }, { v: 4 }]);
      await store.commit([{ collection: 'agents', id: 'a3', doc: null, position: 6 }], { agents: 6 });
      expect(await store.lowestCheckpoint(['agents', 'other'])).toBe(3);
      await store.commit([{ collection: 'agents', id: 'a4', doc: { v: 7 }, position: 7 }], { agents: 7 });
      // Closing stores what is held.
      await store.close();
      expect(await stored(schema)).toEqual({
        docs: [
          { id: 'a1', doc: { v: 2 }, position: 2 },
          { id: 'a2', doc: { v: 4 }, position: 4 },
          { id: 'a3', doc: null, position: 6 },
          { id: 'a4', doc: { v: 7 }, position: 7 },
        ],
        checkpoints: [
          { name: 'agents', position: 7 },
          { name: 'other', position: 3 },
        ],
      });
    });

    it('stores a commit with { now } before it resolves, with what was held before it', async () => {
      const schema = freshSchema();
      const store = await open(Date.now, schema, 600_000);
      await store.commit([{ collection: 'agents', id: 'a1', doc: { v: 1 }, position: 1 }], { agents: 1 });
      await store.commit([{ collection: 'agents', id: 'a2', doc: { v: 2 }, position: 2 }], { agents: 2 });
      await store.commit([{ collection: 'sip-dialogs', id: 'd1', doc: { leg: 'x' } }], {}, { now: true });
      expect(await stored(schema)).toEqual({
        docs: [
          { id: 'a1', doc: { v: 1 }, position: 1 },
          { id: 'a2', doc: { v: 2 }, position: 2 },
          { id: 'd1', doc: { leg: 'x' }, position: null },
        ],
        checkpoints: [{ name: 'agents', position: 2 }],
      });
      await store.close();
    });

    it('merged commits end as the same commits stored one by one', async () => {
      const schema = freshSchema();
      const store = await open(Date.now, schema, 600_000);
      await store.commit([], { p: 1 });
      // Held together: a later position wins, an older one does not land over it, a checkpoint never moves back.
      await store.commit([{ collection: 'c', id: 'x', doc: { v: 5 }, position: 5 }], { p: 5 });
      await store.commit([{ collection: 'c', id: 'x', doc: { v: 3 }, position: 3 }], { p: 3 });
      await store.commit([{ collection: 'c', id: 'y', doc: { v: 1 } }], {});
      await store.commit([{ collection: 'c', id: 'y', doc: null }], {});
      // Another process stored a newer z; an unconditional write makes its position NULL, so a
      // projector's write at a lower position lands after it, as it would one by one.
      await onServer((c) => c.query(`INSERT INTO ${schema}.docs (collection, id, doc, position) VALUES ('c', 'z', '{"v":9}', 9)`));
      await store.commit([{ collection: 'c', id: 'z', doc: { v: 0 } }], {});
      await store.commit([{ collection: 'c', id: 'z', doc: { v: 2 }, position: 2 }], {});
      await store.close();
      expect(await stored(schema)).toEqual({
        docs: [
          { id: 'x', doc: { v: 5 }, position: 5 },
          { id: 'z', doc: { v: 2 }, position: 2 },
        ],
        checkpoints: [{ name: 'p', position: 5 }],
      });
    });

    it('a held document that cannot be stored fails its own commit, not the held ones', async () => {
      const schema = freshSchema();
      const store = await open(Date.now, schema, 600_000);
      await store.commit([], { p: 1 });
      await store.commit([{ collection: 'c', id: 'x', doc: { v: 1 }, position: 2 }], { p: 2 });
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      await expect(store.commit([{ collection: 'c', id: 'y', doc: cyclic, position: 3 }], { p: 3 })).rejects.toThrow();
      await store.close();
      expect(await stored(schema)).toEqual({ docs: [{ id: 'x', doc: { v: 1 }, position: 2 }], checkpoints: [{ name: 'p', position: 2 }] });
    });
  });
});
