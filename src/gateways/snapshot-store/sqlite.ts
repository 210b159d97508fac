/**
 * Aggregate snapshots in their own SQLite file (`DATA_DIR/snapshots.db`). A snapshot is a cache of a
 * fold of immutable events, so it needs no fsync (NORMAL) and a lost or unreadable one is ignored:
 * the stream is folded from the previous one, or from the start.
 */
import type Database from 'better-sqlite3';
import { openSqlite } from '../sqlite.js';
import type { Snapshot, SnapshotStore } from './port.js';

export class SqliteSnapshotStore implements SnapshotStore {
  private readonly db: Database.Database;
  private readonly stmts;

  constructor(file: string) {
    this.db = openSqlite(file, 'NORMAL');
    this.db.exec('CREATE TABLE IF NOT EXISTS snapshots (key TEXT PRIMARY KEY, revision INTEGER NOT NULL, position INTEGER NOT NULL, state TEXT NOT NULL)');
    this.stmts = {
      get: this.db.prepare<[string], { revision: number; position: number; state: string }>('SELECT revision, position, state FROM snapshots WHERE key = ?'),
      // Never move a snapshot back (two processes may write the same stream's).
      put: this.db.prepare(
        `INSERT INTO snapshots (key, revision, position, state) VALUES (?, ?, ?, ?)
         ON CONFLICT (key) DO UPDATE SET revision = excluded.revision, position = excluded.position, state = excluded.state
         WHERE excluded.revision > snapshots.revision`,
      ),
    };
  }

  get(key: string): Snapshot | undefined {
    try {
      const row = this.stmts.get.get(key);
      return row && { revision: row.revision, position: row.position, state: JSON.parse(row.state) };
    } catch {
      return undefined;
    }
  }

  put(key: string, s: Snapshot): void {
    try {
      this.stmts.put.run(key, s.revision, s.position, JSON.stringify(s.state));
    } catch {
      /* a snapshot is an optimisation */
    }
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
