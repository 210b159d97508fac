/**
 * The PostgreSQL read store against the real server: the port's contract (each store on a schema of
 * its own, dropped after), hot read models over it, and what is PostgreSQL's own: the finds' indexes.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { PostgresReadStore } from '../../src/gateways/read-store/postgres.js';
import { HotReadStore } from '../../src/gateways/read-store/hot.js';
import type { ReadStore } from '../../src/gateways/read-store/port.js';
import { readStoreContract } from './read-store.contract.js';
import { PG_URL, dropSchemas, freshSchema, onServer, postgresAvailable } from '../support/postgres.js';

const available = await postgresAvailable();
const schemas = new Set<string>();
const schemaOf = new WeakMap<ReadStore, string>();
async function open(clock: () => number = Date.now, schema = freshSchema()) {
  schemas.add(schema);
  const store = await PostgresReadStore.open(PG_URL, { schema, clock });
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
    expect(await plan(`SELECT doc FROM ${schema}.docs WHERE collection = 'agents' AND doc->'svcId' = '101' AND doc->'exists' = 'true' ORDER BY id`)).toMatch(/Index|Bitmap/);
    const deliveries = await plan(
      `SELECT doc FROM ${schema}.docs WHERE collection = 'deliveries' AND doc->'svcId' = '101' AND doc->'status' = '"failed"' ORDER BY (doc->'createdAt') DESC NULLS LAST, id LIMIT 10`,
    );
    expect(deliveries).toMatch(/Index Scan using docs_deliveries_svcid_status_createdat_desc/);
    expect(deliveries).not.toMatch(/Sort/);
    const latest = await store.find('deliveries', { svcId: 101, status: 'failed' }, { orderBy: { field: 'createdAt', direction: 'desc' }, limit: 2 });
    expect(latest.map((d) => d.createdAt)).toEqual([1941, 1881]);
    await store.close();
  });

  it('stores a NUL character as U+FFFD instead of failing the commit', async () => {
    const store = await open();
    await store.commit([{ collection: 'agents', id: 'a\u0000', doc: { name: 'x\u0000y', list: ['\\u0000'] } }], { p: 1 });
    expect(await store.get('agents', 'a\u0000')).toEqual({ name: 'x\ufffdy', list: ['\\u0000'] });
    expect(await store.checkpoint('p')).toBe(1);
    await store.close();
  });
});
