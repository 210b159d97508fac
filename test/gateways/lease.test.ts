/** One contract for the lease port, run against the embedded (SQLite) and Redis adapters. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Lease } from '../../src/gateways/lease/port.js';
import { SqliteLease } from '../../src/gateways/lease/sqlite.js';
import { RedisLease } from '../../src/gateways/lease/redis.js';
import { PostgresLease } from '../../src/gateways/lease/postgres.js';
import { PG_URL, dropSchemas, freshSchema, postgresAvailable } from '../support/postgres.js';
import { until } from '../support/until.js';

function leaseContract(name: string, open: (ttlMs: number) => Promise<Lease>) {
  describe(`Lease contract: ${name}`, () => {
    const opened: Lease[] = [];
    const lease = async (ttlMs = 60_000) => {
      const l = await open(ttlMs);
      opened.push(l);
      return l;
    };
    afterAll(async () => {
      for (const l of opened) await l.close().catch(() => {});
    });

    it('has one holder at a time; only the holder renews; release hands it on at once', async () => {
      const a = await lease();
      const b = await lease();
      expect(await a.tryAcquire()).toBe(true);
      expect(await a.tryAcquire()).toBe(true); // taking it again while held is fine
      expect(await b.tryAcquire()).toBe(false);
      expect(await a.renew()).toBe(true);
      expect(await b.renew()).toBe(false);
      await b.release(); // not the holder: changes nothing
      expect(await b.tryAcquire()).toBe(false);
      await a.release();
      expect(await b.tryAcquire()).toBe(true);
      expect(await a.renew()).toBe(false);
      await b.release();
    });

    it('gives every new holding a larger fencing token; retaking a held lease keeps it', async () => {
      const a = await lease();
      const b = await lease();
      expect(a.token).toBeNull();
      expect(await a.tryAcquire()).toBe(true);
      const first = a.token!;
      expect(first).toBeGreaterThan(0);
      expect(await a.tryAcquire()).toBe(true);
      expect(a.token).toBe(first);
      expect(await b.tryAcquire()).toBe(false);
      expect(b.token).toBeNull();
      await a.release();
      expect(await b.tryAcquire()).toBe(true);
      const second = b.token!;
      expect(second).toBeGreaterThan(first);
      await b.release();
      expect(b.token).toBeNull();
      expect(await a.tryAcquire()).toBe(true);
      expect(a.token!).toBeGreaterThan(second);
      await a.release();
    });

    it('runs out after its TTL without renewal; the old holder then finds it lost', async () => {
      const a = await lease(300);
      const b = await lease(300);
      expect(await a.tryAcquire()).toBe(true);
      expect(await b.tryAcquire()).toBe(false);
      await until(() => b.tryAcquire(), 'the lease to run out', 5000, 50);
      expect(await a.renew()).toBe(false);
      // The holding that outlived a's has the larger token: a's decisions can be refused against it.
      expect(b.token!).toBeGreaterThan(a.token!);
      await b.release();
    });
  });
}

const dir = mkdtempSync(path.join(tmpdir(), 'ct-lease-'));
let n = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));
leaseContract('SQLite', async (ttl) => new SqliteLease(path.join(dir, 'lease.db'), `t${Math.floor(n++ / 2)}`, ttl));

const url = process.env.REDIS_TEST_URL ?? 'redis://127.0.0.1:6379';
const run = `cttest-lease-${process.pid}-${Date.now().toString(36)}`;
let m = 0;
leaseContract('Redis', async (ttl) => new RedisLease(url, `t${Math.floor(m++ / 2)}`, ttl, run));

const pgUp = await postgresAvailable();
const pgSchema = freshSchema();
let k = 0;
if (pgUp) {
  leaseContract('PostgreSQL', async (ttl) => new PostgresLease(PG_URL, `t${Math.floor(k++ / 2)}`, ttl, { schema: pgSchema }));
  afterAll(() => dropSchemas([pgSchema]));

  describe('PostgresLease', () => {
    it('gives every new holder a higher fencing token; the same holder keeps its own', async () => {
      const a = new PostgresLease(PG_URL, 'fenced', 60_000, { schema: pgSchema });
      const b = new PostgresLease(PG_URL, 'fenced', 60_000, { schema: pgSchema });
      try {
        expect(await a.tryAcquire()).toBe(true);
        const first = a.token!;
        expect(await a.tryAcquire()).toBe(true);
        expect(a.token).toBe(first);
        await a.release();
        expect(await b.tryAcquire()).toBe(true);
        expect(b.token).toBe(first + 1);
        await b.release();
        expect(await a.tryAcquire()).toBe(true);
        expect(a.token).toBe(first + 2);
      } finally {
        await a.close();
        await b.close();
      }
    });
  });
}

describe('SqliteLease', () => {
  it('is taken at once from a holder whose process is gone', async () => {
    const file = path.join(dir, 'dead.db');
    const a = new SqliteLease(file, 'worker', 60_000);
    expect(await a.tryAcquire()).toBe(true);
    await a.close();
    // Make the holder look like a process that died (a pid no process has).
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(file);
    db.prepare('UPDATE leases SET pid = ? WHERE name = ?').run(2 ** 22 + 12345, 'worker');
    db.close();
    const b = new SqliteLease(file, 'worker', 60_000);
    expect(await b.tryAcquire()).toBe(true);
    await b.close();
  });
});
