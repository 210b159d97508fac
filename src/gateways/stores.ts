/**
 * Opening the event store and the read store the configuration names: the one place that picks an
 * adapter for them, shared by the platform's assembly (src/platform.ts), the operator CLI and replay.
 */
import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { EventStore } from './event-store/port.js';
import type { ReadStore } from './read-store/port.js';
import { SqliteEventStore } from './event-store/sqlite.js';
import { writerThreadModule } from './event-store/sqlite-writer.js';
import { checkpointerThreadModule } from './wal-checkpointer.js';
import { canRunThreads } from './sqlite-thread.js';
import { KurrentDbEventStore } from './event-store/kurrentdb.js';
import { PostgresEventStore } from './event-store/postgres.js';
import { SqliteReadStore } from './read-store/sqlite.js';
import { MongoReadStore } from './read-store/mongodb.js';
import { PostgresReadStore } from './read-store/postgres.js';

/** KurrentDB when EVENTSTORE_URL is set (refusing a server older than 25.1), else PostgreSQL when DATABASE_URL is, else the embedded SQLite file. */
export async function openEventStore(config: Config, now: () => number, logger?: Logger): Promise<EventStore> {
  if (config.eventStoreUrl) {
    return KurrentDbEventStore.connect(config.eventStoreUrl, {
      clock: now,
      log: (level, message, details) => logger?.[level](details ?? {}, message),
    });
  }
  if (config.databaseUrl) {
    return PostgresEventStore.open(config.databaseUrl, { clock: now, log: (level, message, details) => logger?.[level](details ?? {}, message) });
  }
  const file = path.join(config.dataDir, 'events.db');
  const threads = canRunThreads(file);
  return new SqliteEventStore(file, now, {
    writerThread: config.embeddedThreads && threads ? writerThreadModule : null,
    checkpointThread: threads ? checkpointerThreadModule : null,
  });
}

/**
 * How long the embedded and the PostgreSQL read store hold a projector's commits to store them
 * together under load (src/gateways/read-store/pending-writes.ts): this process reads them at once;
 * another process on the same DATA_DIR or database at most this much later.
 */
export const READ_STORE_COALESCE_MS = 20;

/** MongoDB when `MONGODB_URL` is set (connects and creates its indexes first), else PostgreSQL when `DATABASE_URL` is, else SQLite in DATA_DIR. */
export async function openReadStore(config: Config, now: () => number): Promise<ReadStore> {
  if (config.mongodbUrl) return MongoReadStore.open(config.mongodbUrl, { clock: now });
  if (config.databaseUrl) return PostgresReadStore.open(config.databaseUrl, { clock: now, coalesceMs: READ_STORE_COALESCE_MS });
  const file = path.join(config.dataDir, 'read.db');
  return new SqliteReadStore(file, now, {
    writerThread: config.embeddedThreads,
    coalesceMs: READ_STORE_COALESCE_MS,
    checkpointThread: canRunThreads(file) ? checkpointerThreadModule : null,
  });
}

