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
import { canRunThreads } from '../sqlite-thread.js';
import type { Doc, DocWrite, FindOptions, ReadStore, Scalar, Versioned } from './port.js';
import { ReadStoreWrites, TOMBSTONE_KEEP_MS, type RowWrite } from './sqlite-writes.js';
import { ReadWriterThread, readWriterModule } from './sqlite-writer.js';

export { TOMBSTONE_KEEP_MS };

const FIELD = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Expired rows are purged at start and then at most this often, from a commit. */
const PURGE_EVERY_MS = 10 * 60_000;

export class SqliteReadStore implements ReadStore {
  /** Documents and checkpoints commit in one transaction. */
  readonly atomicCommits = true;
  private nextPurge = 0;
  private readonly db: Database.Database;
  private readonly stmts;
  private readonly findCache = new Map<string, Database.Statement>();
  /** Writes on this thread's connection, or (`writerThread`) on the store's writer thread. */
  private readonly writes: ReadStoreWrites;
  private readonly thread: ReadWriterThread | null = null;

  /**
   * `writerThread`: the platform's read.db writes on a thread of its own where the build can run it
   * (true), or on the thread a build's module runs (tests); by default on this thread.
   */
  constructor(
    file: string,
    private readonly clock: () => number = Date.now,
    options: { writerThread?: boolean | URL } = {},
  ) {
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
      // json_each: one statement for any number of ids.
      versionedMany: this.db.prepare<[string, string], { id: string; data: string; expires_at: number | null; position: number | null }>(
        'SELECT id, data, expires_at, position FROM docs WHERE collection = ? AND id IN (SELECT value FROM json_each(?))',
      ),
      checkpoint: this.db.prepare<[string], { position: number }>('SELECT position FROM checkpoints WHERE name = ?'),
      // json_each: one statement for any number of names.
      checkpointsOf: this.db.prepare<[string], { position: number }>('SELECT position FROM checkpoints WHERE name IN (SELECT value FROM json_each(?))'),
      scan: this.db.prepare<[string, number], { id: string; data: string; position: number | null }>(
        'SELECT id, data, position FROM docs WHERE collection = ? AND (expires_at IS NULL OR expires_at > ?) ORDER BY id',
      ),
    };
    this.writes = new ReadStoreWrites(this.db);
    this.purge();
    const module = options.writerThread instanceof URL ? options.writerThread : options.writerThread && canRunThreads(file) ? readWriterModule : null;
    if (module && file !== ':memory:') this.thread = new ReadWriterThread(file, module);
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
    return this.versioned<T>(this.stmts.versioned.get(collection, id));
  }

  async getVersionedMany<T extends Doc = Doc>(collection: string, ids: readonly string[]): Promise<Versioned<T>[]> {
    if (ids.length === 0) return [];
    if (ids.length === 1) return [this.versioned<T>(this.stmts.versioned.get(collection, ids[0]!))];
    const rows = new Map(this.stmts.versionedMany.all(collection, JSON.stringify(ids)).map((r) => [r.id, r]));
    return ids.map((id) => this.versioned<T>(rows.get(id)));
  }

  private versioned<T extends Doc>(row: { data: string; expires_at: number | null; position: number | null } | undefined): Versioned<T> {
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
    const now = this.clock();
    const rows: RowWrite[] = writes.map((w) => ({ collection: w.collection, id: w.id, data: w.doc === null ? null : JSON.stringify(w.doc), position: w.position ?? null }));
    const json = JSON.stringify(checkpoints);
    const purge = now >= this.nextPurge;
    if (purge) this.nextPurge = now + PURGE_EVERY_MS;
    if (this.thread) return this.thread.commit(rows, json, now, purge);
    this.writes.commit(rows, json, now);
    if (purge) this.writes.purge(now);
  }

  /** Drops tombstones and expired documents older than TOMBSTONE_KEEP_MS (an index finds them). */
  private purge() {
    const now = this.clock();
    this.writes.purge(now);
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
    const data = JSON.stringify(doc);
    if (this.thread) return this.thread.put(collection, id, data, options.expiresAt ?? null);
    this.writes.put(collection, id, data, options.expiresAt ?? null);
  }

  async insertIfAbsent(collection: string, id: string, doc: Doc, options: { expiresAt?: number } = {}): Promise<boolean> {
    const data = JSON.stringify(doc);
    if (this.thread) return this.thread.insertIfAbsent(collection, id, data, options.expiresAt ?? null, this.clock());
    return this.writes.insertIfAbsent(collection, id, data, options.expiresAt ?? null, this.clock());
  }

  async scan(collection: string): Promise<{ id: string; doc: Doc }[]> {
    return this.stmts.scan.all(collection, this.clock()).map((r) =>
      r.position === null ? { id: r.id, doc: JSON.parse(r.data) as Doc } : { id: r.id, doc: JSON.parse(r.data) as Doc, position: r.position },
    );
  }

  async delete(collection: string, id: string): Promise<void> {
    if (this.thread) return this.thread.delete(collection, id);
    this.writes.delete(collection, id);
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
    // The writes already made are answered first (the thread answers in order).
    await this.thread?.close();
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
