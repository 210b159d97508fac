/**
 * Every write of the SQLite read store, on whichever connection runs them: the platform thread's own
 * (TypeScript sources, replay's staged stores) or the store's writer thread (the platform's read.db
 * in the built code, sqlite-writer.ts). Documents arrive as JSON text, the time as the caller's clock.
 */
import type Database from 'better-sqlite3';
import type { Scalar } from './port.js';

/** A document write as stored: `data` null deletes (with a position: leaves a tombstone). */
export interface RowWrite {
  collection: string;
  id: string;
  data: string | null;
  position: number | null;
}

/** How long a projector's tombstone (and any expired document) is kept before it is purged. */
export const TOMBSTONE_KEEP_MS = 24 * 3600_000;

export class ReadStoreWrites {
  private readonly stmts;
  private readonly commitTx: (writes: RowWrite[], checkpoints: string, now: number) => void;

  constructor(db: Database.Database) {
    this.stmts = {
      upsert: db.prepare(
        'INSERT INTO docs (collection, id, data, expires_at) VALUES (?, ?, ?, ?) ON CONFLICT (collection, id) DO UPDATE SET data = excluded.data, expires_at = excluded.expires_at, position = NULL',
      ),
      // A projector's write (or, with an expiry of now, its tombstone): only over an older one.
      upsertAt: db.prepare(
        `INSERT INTO docs (collection, id, data, expires_at, position) VALUES (?, ?, ?, ?, ?) ON CONFLICT (collection, id) DO UPDATE
         SET data = excluded.data, expires_at = excluded.expires_at, position = excluded.position WHERE docs.position IS NULL OR docs.position < excluded.position`,
      ),
      insertIfAbsent: db.prepare(
        'INSERT INTO docs (collection, id, data, expires_at) VALUES (?, ?, ?, ?) ON CONFLICT (collection, id) DO UPDATE SET data = excluded.data, expires_at = excluded.expires_at, position = NULL WHERE docs.expires_at IS NOT NULL AND docs.expires_at <= ?',
      ),
      del: db.prepare('DELETE FROM docs WHERE collection = ? AND id = ?'),
      // Every checkpoint of a commit in one statement (the projector moves all of them each batch).
      setCheckpoints: db.prepare(
        'INSERT INTO checkpoints (name, position) SELECT key, value FROM json_each(?) WHERE true ON CONFLICT (name) DO UPDATE SET position = MAX(position, excluded.position)',
      ),
      purge: db.prepare('DELETE FROM docs WHERE expires_at IS NOT NULL AND expires_at <= ?'),
    };
    // Made once: a transaction wrapper per commit showed in profiles.
    this.commitTx = db.transaction((writes: RowWrite[], checkpoints: string, now: number) => {
      for (const w of writes) {
        if (w.position !== null) {
          if (w.data !== null) this.stmts.upsertAt.run(w.collection, w.id, w.data, null, w.position);
          else this.stmts.upsertAt.run(w.collection, w.id, 'null', now, w.position);
        } else if (w.data === null) this.stmts.del.run(w.collection, w.id);
        else this.stmts.upsert.run(w.collection, w.id, w.data, null);
      }
      if (checkpoints !== '{}') this.stmts.setCheckpoints.run(checkpoints);
    });
  }

  /** Documents and checkpoints (a JSON object) in one transaction. */
  commit(writes: RowWrite[], checkpoints: string, now: number): void {
    this.commitTx(writes, checkpoints, now);
  }

  put(collection: string, id: string, data: string, expiresAt: number | null): void {
    this.stmts.upsert.run(collection, id, data, expiresAt);
  }

  insertIfAbsent(collection: string, id: string, data: string, expiresAt: number | null, now: number): boolean {
    return this.stmts.insertIfAbsent.run(collection, id, data, expiresAt, now).changes > 0;
  }

  delete(collection: string, id: string): void {
    this.stmts.del.run(collection, id);
  }

  /** Drops tombstones and expired documents older than TOMBSTONE_KEEP_MS as of `now` (an index finds them). */
  purge(now: number): void {
    this.stmts.purge.run(now - TOMBSTONE_KEEP_MS);
  }
}

/** How a field's value is matched: booleans and numbers by their JSON type. */
export function kindOf(v: Scalar): 'boolean' | 'number' | 'other' {
  return typeof v === 'boolean' ? 'boolean' : typeof v === 'number' ? 'number' : 'other';
}

/** A boolean is matched by its JSON type name ('true' / 'false'). */
export function toSql(v: Scalar): string | number | null {
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  return v;
}
