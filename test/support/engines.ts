/**
 * The end-to-end suite pointed at the production engines instead of the embedded SQLite stores.
 *
 * `E2E_ENGINES=doubles`: every server `startServer` starts gets its own fresh KurrentDB gRPC double
 * (EVENTSTORE_URL) and MongoDB wire-protocol double (MONGODB_URL), in this test process; with
 * `E2E_REDIS_URL` set it also runs its jobs on that Redis (REDIS_URL) under a prefix of its own.
 * A server restarted on the same DATA_DIR (`stop({ keepData: true })` then `startServer(.., { dataDir })`)
 * finds the same doubles and prefix again, as a restarted process finds the same servers.
 *
 * `E2E_ENGINES=postgres`: every server gets an empty PostgreSQL database of its own (DATABASE_URL on
 * the server at PG_TEST_URL, default 127.0.0.1:5432, emptied for the next server when it stops for
 * good: test/support/postgres.ts) for the
 * event log, the read models and the worker lease, and with `E2E_REDIS_URL` its jobs on Redis: the
 * production setup DATABASE_URL + REDIS_URL on real servers (`npm run test:e2e:postgres`).
 *
 * `E2E_ENGINES=real` is not offered: a unique MongoDB database per server is easy, but one KurrentDB
 * log cannot be split per server from the environment. The adapter has a `streamPrefix` option (the
 * contract suites of `npm run test:engines` use it), but the platform's configuration does not expose
 * it, so a server reads the whole `$all`: every test would see every other test's (and every earlier
 * run's) services 101 and 202, calls and agents, and exact assertions would fail for that reason, not
 * for a fault. Real servers are exercised by `npm run test:engines` (the port contract suites).
 */
import { randomUUID } from 'node:crypto';
import { dropRedisKeys } from './redis-keys.js';
import { KurrentDbDouble } from './kurrentdb-double.js';
import { MongoDouble } from './mongo-double/server.js';
import { claimDatabase, releaseDatabase } from './postgres.js';
import { RUN_PREFIX } from './postgres-global.js';
import { PostgresEventStore } from '../../src/gateways/event-store/postgres.js';

export type EngineMode = 'doubles' | 'postgres' | null;

export function engineMode(): EngineMode {
  const mode = process.env.E2E_ENGINES?.trim();
  if (!mode || mode === 'sqlite') return null;
  if (mode === 'doubles' || mode === 'postgres') return mode;
  throw new Error(`E2E_ENGINES=${mode}: only "doubles" and "postgres" are supported (see test/support/engines.ts for why not "real")`);
}

/** True when the e2e suite runs on the engines: tests about the embedded SQLite files skip. */
export const onEngines = engineMode() !== null;
/** True on the KurrentDB and MongoDB doubles (not on PostgreSQL): tests those cannot serve skip. */
export const onDoubles = engineMode() === 'doubles';

export interface Engines {
  env: Record<string, string>;
  /** The doubles (E2E_ENGINES=doubles), else null. */
  kurrent: KurrentDbDouble | null;
  mongo: MongoDouble | null;
  redisPrefix: string | null;
  stop(): Promise<void>;
}

const byDataDir = new Map<string, Engines>();

/**
 * The engines a server on `dataDir` runs against: the same ones again after a restart on that DATA_DIR.
 * `redis: false` leaves the jobs on the embedded queue: a test that drives the platform's clock needs
 * that, as BullMQ times delayed jobs on Redis's clock, which no test controls.
 */
export async function enginesFor(dataDir: string, options: { redis?: boolean } = {}): Promise<Engines> {
  const known = byDataDir.get(dataDir);
  if (known) return known;
  if (engineMode() === 'postgres') return postgresFor(dataDir, options);
  const kurrent = new KurrentDbDouble();
  const mongo = new MongoDouble();
  const eventStoreUrl = await kurrent.start();
  await mongo.start();
  const redisUrl = (options.redis ?? true) ? process.env.E2E_REDIS_URL?.trim() || null : null;
  const redisPrefix = redisUrl ? `e2e-${randomUUID().slice(0, 8)}` : null;
  const env: Record<string, string> = { EVENTSTORE_URL: eventStoreUrl, MONGODB_URL: mongo.url('telephony') };
  if (redisUrl && redisPrefix) Object.assign(env, { REDIS_URL: redisUrl, REDIS_PREFIX: redisPrefix });
  const engines: Engines = {
    env,
    kurrent,
    mongo,
    redisPrefix,
    async stop() {
      byDataDir.delete(dataDir);
      await kurrent.stop();
      await mongo.stop();
      if (redisUrl && redisPrefix) await dropRedisKeys(redisUrl, `${redisPrefix}:*`);
    },
  };
  byDataDir.set(dataDir, engines);
  return engines;
}

async function withRedis(env: Record<string, string>, options: { redis?: boolean }) {
  const redisUrl = (options.redis ?? true) ? process.env.E2E_REDIS_URL?.trim() || null : null;
  const redisPrefix = redisUrl ? `e2e-${randomUUID().slice(0, 8)}` : null;
  if (redisUrl && redisPrefix) Object.assign(env, { REDIS_URL: redisUrl, REDIS_PREFIX: redisPrefix });
  return { redisPrefix, dropRedis: () => (redisUrl && redisPrefix ? dropRedisKeys(redisUrl, `${redisPrefix}:*`) : Promise.resolve()) };
}

async function postgresFor(dataDir: string, options: { redis?: boolean }): Promise<Engines> {
  // Named after the run (the forks' parent): the run's teardown drops them all (postgres-global.ts).
  const db = await claimDatabase(RUN_PREFIX(process.ppid));
  const env: Record<string, string> = { DATABASE_URL: db.url };
  const { redisPrefix, dropRedis } = await withRedis(env, options);
  const engines: Engines = {
    env,
    kurrent: null,
    mongo: null,
    redisPrefix,
    async stop() {
      byDataDir.delete(dataDir);
      await releaseDatabase(db);
      await dropRedis();
    },
  };
  byDataDir.set(dataDir, engines);
  return engines;
}

/** The environment that points a child process on `dataDir` at the same engines (empty without E2E_ENGINES). */
export async function engineEnv(dataDir: string): Promise<Record<string, string>> {
  return onEngines ? (await enginesFor(dataDir)).env : {};
}

/** The event types of one stream as the engines (or, without E2E_ENGINES, null: read the SQLite file) hold them. */
export async function engineStream(dataDir: string, streamId: string): Promise<Array<{ type: string; data: unknown }> | null> {
  const engines = byDataDir.get(dataDir);
  if (!engines) return null;
  if (!engines.kurrent) {
    const store = await PostgresEventStore.open(engines.env.DATABASE_URL!);
    try {
      return (await store.readStream(streamId)).map((e) => ({ type: e.type, data: e.data }));
    } finally {
      await store.close();
    }
  }
  return engines.kurrent.log.filter((e) => e.streamId === streamId).map((e) => ({ type: e.type, data: JSON.parse(e.data.toString('utf8')) as unknown }));
}
