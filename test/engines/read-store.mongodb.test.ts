/**
 * The ReadStore contract against a real MongoDB server: `MONGODB_URL=mongodb://host:27017 npm run test:engines`.
 * Each store gets its own database (named from the URL's, else `ct-engine`), dropped afterwards.
 * Skipped when MONGODB_URL is unset.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { MongoClient } from 'mongodb';
import { dbNameOf, MongoReadStore } from '../../src/gateways/read-store/mongodb.js';
import type { ReadStore } from '../../src/gateways/read-store/port.js';
import { readStoreContract } from '../gateways/read-store.contract.js';

const url = process.env.MONGODB_URL;
const base = url ? (dbNameOf(url) ?? 'ct-engine') : '';
const used = new Set<string>();
const dbs = new WeakMap<ReadStore, string>();

describe.skipIf(!url)('MongoDB engine', () => {
  afterAll(async () => {
    const client = new MongoClient(url!);
    for (const name of used) await client.db(name).dropDatabase();
    await client.close();
  });

  it('is a MongoDB server, not the test double', async () => {
    const client = new MongoClient(url!);
    const info = await client.db('admin').command({ buildInfo: 1 });
    await client.close();
    expect(info.gitVersion).not.toBe('cloud-telephony-test-double');
  });

  readStoreContract(`mongodb server ${url?.replace(/\/\/[^@/]*@/, '//***@')}`, {
    async create(clock) {
      const dbName = `${base}-${randomUUID().slice(0, 8)}`;
      used.add(dbName);
      const store = await MongoReadStore.open(url!, { dbName, clock });
      dbs.set(store, dbName);
      return store;
    },
    async reopen(store, clock) {
      const dbName = dbs.get(store)!;
      await store.close();
      const again = await MongoReadStore.open(url!, { dbName, clock });
      dbs.set(again, dbName);
      return again;
    },
  });
});
