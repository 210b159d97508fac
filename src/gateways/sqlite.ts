/** Opening an embedded SQLite file the way every embedded adapter wants it. */
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import path from 'node:path';

/**
 * WAL (readers never block the writer) and a busy timeout (several processes may share a file).
 * `synchronous`: FULL where an acknowledged write must survive power loss or kill -9 (the event log,
 * the job queue), NORMAL where the data can be rebuilt (read models replay from the log).
 */
export function openSqlite(file: string, synchronous: 'FULL' | 'NORMAL'): Database.Database {
  if (file !== ':memory:') mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  db.pragma('busy_timeout = 5000');
  return db;
}
