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
import { WalCheckpointer } from '../wal-checkpointer.js';
import { canRunThreads } from '../sqlite-thread.js';
import type { CommitOptions, Doc, DocWrite, FindOptions, ReadStore, Scalar, Versioned } from './port.js';
import { ReadStoreWrites, TOMBSTONE_KEEP_MS, kindOf, toSql, type RowWrite } from './sqlite-writes.js';
import { ReadWriterThread, readWriterModule } from './sqlite-writer.js';
import { HeldCommits } from './held-commits.js';
import { type PendingWrites, WAIT, heldVersioned, jsonLater, readHeld, type HeldRow } from './pending-writes.js';

export { TOMBSTONE_KEEP_MS };

const FIELD = /^[A-Za-z_][A-Za-z0-9_]*$/;

const rowNow = (w: DocWrite): RowWrite => ({ collection: w.collection, id: w.id, data: w.doc === null ? null : JSON.stringify(w.doc), position: w.position ?? null });

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
  readonly checkpointer: WalCheckpointer | null = null;
  /** With `coalesceMs`: the commits held (held-commits.ts, pending-writes.ts). */
  private readonly held: HeldCommits | null = null;

  /**
   * `writerThread`: the platform's read.db writes on a thread of its own where the build can run it
   * (true), or on the thread a build's module runs (tests); by default on this thread.
   * `coalesceMs`: commits that come less than this long after the last one stored are held and stored
   * together once it has passed (see pending-writes.ts); reads through this instance see them at once
   * (what they touch is stored first). Another process on the file sees them that much later, and a
   * crash loses them with their checkpoints: the projector applies those events again from the log.
   * 0 (the default): each commit is stored before it resolves.
   */
  constructor(
    file: string,
    private readonly clock: () => number = Date.now,
    options: { writerThread?: boolean | URL; coalesceMs?: number; checkpointThread?: URL | null } = {},
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
    // Writes on this thread: their WAL checkpoints on a thread (wal-checkpointer.ts) where one is given.
    else this.checkpointer = WalCheckpointer.start(this.db, options.checkpointThread);
    // On the writer thread a store ends later, so reads must know what is on its way.
    const coalesceMs = options.coalesceMs ?? 0;
    if (coalesceMs > 0) this.held = new HeldCommits(coalesceMs, (rows, checkpoints) => this.storeRows(rows, checkpoints), this.thread !== null);
  }

  async get<T extends Doc = Doc>(collection: string, id: string): Promise<T | null> {
    const held = this.fromHeld(collection, id);
    if (held !== undefined && held !== WAIT) return held.data === null ? null : (JSON.parse(held.data) as T);
    await this.settle((p) => p.holdsDocument(collection, id));
    const row = this.stmts.get.get(collection, id, this.clock());
    return row ? (JSON.parse(row.data) as T) : null;
  }

  /** `get` without the promise, for a fold that reads documents back between events (replay). */
  getNow(collection: string, id: string): Doc | null {
    if (this.held) throw new Error('getNow reads no held writes: not with coalesceMs');
    const row = this.stmts.get.get(collection, id, this.clock());
    return row ? (JSON.parse(row.data) as Doc) : null;
  }

  /** With the position a projector stored it at (0: none); a tombstone or an expired document is null. */
  async getVersioned<T extends Doc = Doc>(collection: string, id: string): Promise<Versioned<T>> {
    const held = this.fromHeld(collection, id);
    if (held !== undefined && held !== WAIT) return heldVersioned<T>(held);
    await this.settle((p) => p.holdsDocument(collection, id));
    return this.versioned<T>(this.stmts.versioned.get(collection, id));
  }

  async getVersionedMany<T extends Doc = Doc>(collection: string, ids: readonly string[]): Promise<Versioned<T>[]> {
    if (ids.length === 0) return [];
    const held = this.held?.pending.holdsAnyOf(collection, ids) ? ids.map((id) => this.fromHeld(collection, id)) : null;
    if (held && !held.includes(WAIT)) {
      // The held ones from what is held, the others from the file.
      const others = ids.filter((_, i) => held[i] === undefined);
      const rows = new Map(others.length === 0 ? [] : this.stmts.versionedMany.all(collection, JSON.stringify(others)).map((r) => [r.id, r]));
      return ids.map((id, i) => {
        const h = held[i];
        return h !== undefined && h !== WAIT ? heldVersioned<T>(h) : this.versioned<T>(rows.get(id));
      });
    }
    await this.settle((p) => p.holdsAnyOf(collection, ids));
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
    await this.settle((p) => p.holdsCollection(collection));
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

  async commit(writes: DocWrite[], checkpoints: Record<string, number>, options: CommitOptions = {}): Promise<void> {
    if (!this.held) return this.storeRows(writes.map(rowNow), JSON.stringify(checkpoints));
    if (options.now) {
      // One transaction of its own, after any held write of the same documents or checkpoints.
      const rows = writes.map(rowNow);
      const names = Object.keys(checkpoints);
      await this.held.settle((p) => rows.some((r) => p.holdsDocument(r.collection, r.id)) || (names.length > 0 && p.holdsCheckpoint(names)));
      return this.storeRows(rows, JSON.stringify(checkpoints));
    }
    // JSON first (or, for a frozen plain document, a check that its JSON cannot fail later): a
    // document that cannot be stored fails its commit, and nothing of it is kept.
    const rows: HeldRow[] = writes.map((w) =>
      w.doc !== null && jsonLater(w.doc) ? { collection: w.collection, id: w.id, data: undefined, doc: w.doc, position: w.position ?? null } : rowNow(w),
    );
    return this.held.hold(rows, checkpoints);
  }

  /** A document's held write as a read would find it once stored (pending-writes.ts readHeld). */
  private fromHeld(collection: string, id: string): RowWrite | typeof WAIT | undefined {
    if (!this.held) return undefined;
    return readHeld(this.held.pending, this.held.storing?.writes ?? null, collection, id, () => this.stmts.versioned.get(collection, id)?.position);
  }

  /** Waits for the held writes to be stored when a read or direct write touches one of them. */
  private async settle(touches: (p: PendingWrites) => boolean): Promise<void> {
    if (this.held) await this.held.settle(touches);
  }

  /** One transaction: on the writer thread (resolves once committed) or on this thread. */
  private storeRows(rows: RowWrite[], checkpoints: string): Promise<void> {
    const now = this.clock();
    const purge = now >= this.nextPurge;
    if (purge) this.nextPurge = now + PURGE_EVERY_MS;
    if (this.thread) return this.thread.commit(rows, checkpoints, now, purge);
    this.writes.commit(rows, checkpoints, now);
    if (purge) this.writes.purge(now);
    return Promise.resolve();
  }

  /** Drops tombstones and expired documents older than TOMBSTONE_KEEP_MS (an index finds them). */
  private purge() {
    const now = this.clock();
    this.writes.purge(now);
    this.nextPurge = now + PURGE_EVERY_MS;
  }

  async checkpoint(name: string): Promise<number> {
    await this.settle((p) => p.holdsCheckpoint([name]));
    return this.stmts.checkpoint.get(name)?.position ?? 0;
  }

  async lowestCheckpoint(names: string[]): Promise<number> {
    if (names.length === 0) return 0;
    await this.settle((p) => p.holdsCheckpoint(names));
    const wanted = [...new Set(names)];
    const rows = this.stmts.checkpointsOf.all(JSON.stringify(wanted));
    return rows.length < wanted.length ? 0 : Math.min(...rows.map((r) => r.position));
  }

  async put(collection: string, id: string, doc: Doc, options: { expiresAt?: number } = {}): Promise<void> {
    const data = JSON.stringify(doc);
    await this.settle((p) => p.holdsDocument(collection, id));
    if (this.thread) return this.thread.put(collection, id, data, options.expiresAt ?? null);
    this.writes.put(collection, id, data, options.expiresAt ?? null);
  }

  async insertIfAbsent(collection: string, id: string, doc: Doc, options: { expiresAt?: number } = {}): Promise<boolean> {
    const data = JSON.stringify(doc);
    await this.settle((p) => p.holdsDocument(collection, id));
    if (this.thread) return this.thread.insertIfAbsent(collection, id, data, options.expiresAt ?? null, this.clock());
    return this.writes.insertIfAbsent(collection, id, data, options.expiresAt ?? null, this.clock());
  }

  async scan(collection: string): Promise<{ id: string; doc: Doc }[]> {
    await this.settle((p) => p.holdsCollection(collection));
    return this.stmts.scan.all(collection, this.clock()).map((r) =>
      r.position === null ? { id: r.id, doc: JSON.parse(r.data) as Doc } : { id: r.id, doc: JSON.parse(r.data) as Doc, position: r.position },
    );
  }

  async delete(collection: string, id: string): Promise<void> {
    await this.settle((p) => p.holdsDocument(collection, id));
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
    try {
      await this.held?.close();
    } finally {
      // The writes already made are answered first (the thread answers in order).
      await this.thread?.close();
      await this.checkpointer?.close();
      if (this.db.open) this.db.close();
    }
  }
}
