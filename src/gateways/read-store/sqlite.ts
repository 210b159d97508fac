/**
 * Embedded read store: one SQLite file in WAL mode; documents are JSON text.
 *
 * A projector's write carries the log position of the last event applied to the document: it is
 * stored beside it and replaces only a document stored at a lower position, and a projector's delete
 * leaves a tombstone (the position, expired at once, purged a day later). Two processes on one
 * DATA_DIR each run a projector (a standby worker serves as usual): the one behind reads what the
 * other stored with its position and skips the events already in it, and never overwrites a newer
 * document or brings back a deleted one.
 */
import type Database from 'better-sqlite3';
import { RowBatch, openSqlite } from '../sqlite.js';
import type { Doc, DocWrite, FindOptions, ReadStore, Scalar, Versioned } from './port.js';

const FIELD = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** How long a projector's tombstone (and any expired document) is kept before it is purged. */
export const TOMBSTONE_KEEP_MS = 24 * 3600_000;
/** Expired rows are purged at start and then at most this often, from a commit. */
const PURGE_EVERY_MS = 10 * 60_000;

export class SqliteReadStore implements ReadStore {
  /** Documents and checkpoints commit in one transaction. */
  readonly atomicCommits = true;
  private nextPurge = 0;
  private readonly db: Database.Database;
  private readonly stmts;
  private readonly findCache = new Map<string, Database.Statement>();
  private readonly commitTx: (writes: DocWrite[], checkpoints: Record<string, number>) => void;

  constructor(file: string, private readonly clock: () => number = Date.now) {
    // NORMAL is enough: documents and checkpoint commit together, and the log can replay them.
    this.db = openSqlite(file, 'NORMAL');
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS docs (
        collection TEXT NOT NULL,
        id TEXT NOT NULL,
        data TEXT NOT NULL,
        expires_at INTEGER,
        PRIMARY KEY (collection, id)
      ) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS checkpoints (name TEXT PRIMARY KEY, position INTEGER NOT NULL) WITHOUT ROWID;
    `);
    // Files made before documents kept their position: the column is added in place (NULL: no projector position).
    const columns = this.db.prepare<[], { name: string }>('PRAGMA table_info(docs)').all();
    if (!columns.some((c) => c.name === 'position')) this.db.exec('ALTER TABLE docs ADD COLUMN position INTEGER');
    this.db.exec('CREATE INDEX IF NOT EXISTS docs_expiry ON docs (expires_at) WHERE expires_at IS NOT NULL');
    this.stmts = {
      get: this.db.prepare<[string, string, number], { data: string }>(
        'SELECT data FROM docs WHERE collection = ? AND id = ? AND (expires_at IS NULL OR expires_at > ?)',
      ),
      versioned: this.db.prepare<[string, string], { data: string; expires_at: number | null; position: number | null }>(
        'SELECT data, expires_at, position FROM docs WHERE collection = ? AND id = ?',
      ),
      upsert: this.db.prepare(
        'INSERT INTO docs (collection, id, data, expires_at) VALUES (?, ?, ?, ?) ON CONFLICT (collection, id) DO UPDATE SET data = excluded.data, expires_at = excluded.expires_at, position = NULL',
      ),
      // A projector's write (or, with an expiry of now, its tombstone): only over an older one.
      upsertAt: this.db.prepare(
        `INSERT INTO docs (collection, id, data, expires_at, position) VALUES (?, ?, ?, ?, ?) ON CONFLICT (collection, id) DO UPDATE
         SET data = excluded.data, expires_at = excluded.expires_at, position = excluded.position WHERE docs.position IS NULL OR docs.position < excluded.position`,
      ),
      insertIfAbsent: this.db.prepare(
        'INSERT INTO docs (collection, id, data, expires_at) VALUES (?, ?, ?, ?) ON CONFLICT (collection, id) DO UPDATE SET data = excluded.data, expires_at = excluded.expires_at, position = NULL WHERE docs.expires_at IS NOT NULL AND docs.expires_at <= ?',
      ),
      del: this.db.prepare('DELETE FROM docs WHERE collection = ? AND id = ?'),
      checkpoint: this.db.prepare<[string], { position: number }>('SELECT position FROM checkpoints WHERE name = ?'),
      // json_each: one statement for any number of names.
      checkpointsOf: this.db.prepare<[string], { position: number }>('SELECT position FROM checkpoints WHERE name IN (SELECT value FROM json_each(?))'),
      // Every checkpoint of a commit in one statement (the projector moves all of them each batch).
      setCheckpoints: this.db.prepare(
        'INSERT INTO checkpoints (name, position) SELECT key, value FROM json_each(?) WHERE true ON CONFLICT (name) DO UPDATE SET position = MAX(position, excluded.position)',
      ),
      scan: this.db.prepare<[string, number], { id: string; data: string; position: number | null }>(
        'SELECT id, data, position FROM docs WHERE collection = ? AND (expires_at IS NULL OR expires_at > ?) ORDER BY id',
      ),
      purge: this.db.prepare('DELETE FROM docs WHERE expires_at IS NOT NULL AND expires_at <= ?'),
    };
    this.purge();
    // Made once: a transaction wrapper per commit showed in profiles.
    this.commitTx = this.db.transaction((writes: DocWrite[], checkpoints: Record<string, number>) => {
      let now = 0;
      for (const w of writes) {
        if (w.position !== undefined) {
          if (w.doc !== null) this.stmts.upsertAt.run(w.collection, w.id, JSON.stringify(w.doc), null, w.position);
          else this.stmts.upsertAt.run(w.collection, w.id, 'null', (now ||= this.clock()), w.position);
        } else if (w.doc === null) this.stmts.del.run(w.collection, w.id);
        else this.stmts.upsert.run(w.collection, w.id, JSON.stringify(w.doc), null);
      }
      const json = JSON.stringify(checkpoints);
      if (json !== '{}') this.stmts.setCheckpoints.run(json);
    });
  }

  async get<T extends Doc = Doc>(collection: string, id: string): Promise<T | null> {
    const row = this.stmts.get.get(collection, id, this.clock());
    return row ? (JSON.parse(row.data) as T) : null;
  }

  /** `get` without the promise, for a fold that reads documents back between events (replay). */
  getNow(collection: string, id: string): Doc | null {
    const row = this.stmts.get.get(collection, id, this.clock());
    return row ? (JSON.parse(row.data) as Doc) : null;
  }

  /** With the position a projector stored it at (0: none); a tombstone or an expired document is null. */
  async getVersioned<T extends Doc = Doc>(collection: string, id: string): Promise<Versioned<T>> {
    const row = this.stmts.versioned.get(collection, id);
    if (!row) return { doc: null, position: 0 };
    const live = row.expires_at === null || row.expires_at > this.clock();
    return { doc: live ? (JSON.parse(row.data) as T) : null, position: row.position ?? 0 };
  }

  async find<T extends Doc = Doc>(collection: string, where: Record<string, Scalar> = {}, options: FindOptions = {}): Promise<T[]> {
    const fields = Object.keys(where).sort();
    for (const f of fields) if (!FIELD.test(f)) throw new Error(`bad field name ${f}`);
    const order = options.orderBy;
    if (order && !FIELD.test(order.field)) throw new Error(`bad field name ${order.field}`);
    const kinds = fields.map((f) => kindOf(where[f]!));
    const key = JSON.stringify([fields, kinds, order?.field, order?.direction, options.limit !== undefined]);
    let stmt = this.findCache.get(key);
    if (!stmt) {
      // json_extract gives 1/0 for JSON booleans: the JSON type keeps true apart from 1.
      const conds = fields.map((f, i) =>
        kinds[i] === 'boolean'
          ? `json_type(data, '$.${f}') = ?`
          : kinds[i] === 'number'
            ? `json_extract(data, '$.${f}') IS ? AND json_type(data, '$.${f}') IN ('integer', 'real')`
            : `json_extract(data, '$.${f}') IS ?`,
      );
      const sql =
        `SELECT data FROM docs WHERE collection = ? AND (expires_at IS NULL OR expires_at > ?)` +
        conds.map((c) => ` AND ${c}`).join('') +
        (order ? ` ORDER BY json_extract(data, '$.${order.field}') ${order.direction === 'desc' ? 'DESC' : 'ASC'}, id` : ' ORDER BY id') +
        (options.limit !== undefined ? ' LIMIT ?' : '');
      stmt = this.db.prepare(sql);
      this.findCache.set(key, stmt);
    }
    const args: unknown[] = [collection, this.clock(), ...fields.map((f) => toSql(where[f]!))];
    if (options.limit !== undefined) args.push(options.limit);
    return (stmt.all(...args) as { data: string }[]).map((r) => JSON.parse(r.data) as T);
  }

  async commit(writes: DocWrite[], checkpoints: Record<string, number>): Promise<void> {
    this.commitTx(writes, checkpoints);
    if (this.clock() >= this.nextPurge) this.purge();
  }

  /** Drops tombstones and expired documents older than TOMBSTONE_KEEP_MS (an index finds them). */
  private purge() {
    const now = this.clock();
    this.stmts.purge.run(now - TOMBSTONE_KEEP_MS);
    this.nextPurge = now + PURGE_EVERY_MS;
  }

  async checkpoint(name: string): Promise<number> {
    return this.stmts.checkpoint.get(name)?.position ?? 0;
  }

  async lowestCheckpoint(names: string[]): Promise<number> {
    if (names.length === 0) return 0;
    const wanted = [...new Set(names)];
    const rows = this.stmts.checkpointsOf.all(JSON.stringify(wanted));
    return rows.length < wanted.length ? 0 : Math.min(...rows.map((r) => r.position));
  }

  async put(collection: string, id: string, doc: Doc, options: { expiresAt?: number } = {}): Promise<void> {
    this.stmts.upsert.run(collection, id, JSON.stringify(doc), options.expiresAt ?? null);
  }

  async insertIfAbsent(collection: string, id: string, doc: Doc, options: { expiresAt?: number } = {}): Promise<boolean> {
    const info = this.stmts.insertIfAbsent.run(collection, id, JSON.stringify(doc), options.expiresAt ?? null, this.clock());
    return info.changes > 0;
  }

  async scan(collection: string): Promise<{ id: string; doc: Doc }[]> {
    return this.stmts.scan.all(collection, this.clock()).map((r) =>
      r.position === null ? { id: r.id, doc: JSON.parse(r.data) as Doc } : { id: r.id, doc: JSON.parse(r.data) as Doc, position: r.position },
    );
  }

  async delete(collection: string, id: string): Promise<void> {
    this.stmts.del.run(collection, id);
  }

  /** Throwaway storage being built (replay): no journal, no syncs; it becomes durable when promoted. */
  bulkLoadMode(): void {
    this.db.pragma('journal_mode = OFF');
    this.db.pragma('synchronous = OFF');
    this.db.pragma('cache_size = -262144');
  }

  /** Replay: stores the documents of a collection this (fresh) store has none of yet, in one transaction. */
  insertFresh(collection: string, docs: Iterable<[string, Doc]>): void {
    // Many rows a statement: one run per document cost about as much as the insert itself.
    const rows = new RowBatch(this.db, 'INSERT INTO docs (collection, id, data)', 3, '');
    this.db.transaction(() => {
      for (const [id, doc] of docs) rows.add(collection, id, JSON.stringify(doc));
      rows.flush();
    })();
  }

  /** Replay: copies every document of another staged store (the worker's share) into this one. */
  copyDocsFrom(file: string): void {
    this.db.prepare('ATTACH DATABASE ? AS share').run(file);
    try {
      this.db.prepare('INSERT INTO main.docs (collection, id, data, expires_at, position) SELECT collection, id, data, expires_at, position FROM share.docs').run();
    } finally {
      this.db.prepare('DETACH DATABASE share').run();
    }
  }

  /**
   * Replay: copies into this (fresh) store what replay does not rebuild from `liveFile`: documents of
   * collections other than `collections` (idempotency records, the SMS outbox) and checkpoints other
   * than `names` (the workers'), so this store can then take the live one's place whole.
   */
  adoptAuxiliaryFrom(liveFile: string, collections: string[], names: string[]): void {
    this.db.prepare('ATTACH DATABASE ? AS live').run(liveFile);
    try {
      const inList = (n: number) => Array.from({ length: n }, () => '?').join(', ');
      this.db.transaction(() => {
        // Named columns: the live file may predate the position column (it has none to copy then).
        this.db
          .prepare(`INSERT OR REPLACE INTO main.docs (collection, id, data, expires_at) SELECT collection, id, data, expires_at FROM live.docs WHERE collection NOT IN (${inList(collections.length)})`)
          .run(...collections);
        this.db.prepare(`INSERT OR REPLACE INTO main.checkpoints SELECT * FROM live.checkpoints WHERE name NOT IN (${inList(names.length)})`).run(...names);
      })();
    } finally {
      this.db.prepare('DETACH DATABASE live').run();
    }
  }

  /** Ends bulk loading: a plain rollback-journal file, complete on disk, ready to be renamed into place. */
  finishBulkLoad(): void {
    this.db.pragma('journal_mode = DELETE');
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}

function kindOf(v: Scalar): 'boolean' | 'number' | 'other' {
  return typeof v === 'boolean' ? 'boolean' : typeof v === 'number' ? 'number' : 'other';
}

/** A boolean is matched by its JSON type name ('true' / 'false'). */
function toSql(v: Scalar): string | number | null {
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  return v;
}
