/**
 * PostgreSQL read store (DATABASE_URL, without MONGODB_URL), on `pg`: one `docs` table of JSONB
 * documents keyed by (collection, id), and `checkpoints`.
 *
 * A commit is one statement (documents, deletes and checkpoints in data-modifying CTEs), so one
 * transaction and one round trip: the projection's documents and its checkpoint move together.
 * As in the SQLite adapter, a projector's write also keeps its position and replaces only a document
 * stored at a lower one, and its delete leaves a tombstone (expired at once, purged a day later): a
 * second projector on the same database (a standby's process) never applies an event twice.
 *
 * Its connections commit with synchronous_commit off: see `open`. With `coalesceMs` (the platform's),
 * a projector's commits under load are held and stored together as the embedded store's are
 * (pending-writes.ts): each document once, with the newest checkpoints, in one transaction; reads
 * through this instance see them at once (what they touch is stored first), another process (its
 * read-your-writes polls the checkpoints) at most that much later.
 *
 * Every find the queries make (mongodb-indexes.ts, FIND_SHAPES) has a partial index on its collection
 * (postgres-docs.ts: on a generated column of the indexed fields): equality fields, then the sort
 * field, then the id. Scalars are compared as jsonb,
 * so a number never equals its digit string and `true` never equals 1; ids sort bytewise (COLLATE "C").
 */
import type pg from 'pg';
import type { CommitOptions, Doc, DocWrite, FindOptions, ReadStore, Scalar, Versioned } from './port.js';
import { FIND_SHAPES, type FindShape } from './mongodb-indexes.js';
import { docsDdl, field, findKeys, literal } from './postgres-docs.js';
import { timed, jsonbSafe, migrate, noNul, openPool, schemaName, type PgOptions } from '../postgres.js';
import { jsonLater, type HeldRow, type PendingWrites } from './pending-writes.js';
import { HeldCommits } from './held-commits.js';
import type { RowWrite } from './sqlite-writes.js';

/** How long a projector's tombstone (and any expired record) is kept before it is purged. */
const TOMBSTONE_KEEP_MS = 24 * 3600_000;
const PURGE_EVERY_MS = 10 * 60_000;

export interface PostgresReadStoreOptions extends PgOptions {
  clock?: () => number;
  /** Find shapes to index at start (default: every find the platform makes). */
  shapes?: FindShape[];
  /**
   * Commits that come less than this long after the last one stored are held and stored together
   * once it has passed; 0 (the default): each commit is stored before it resolves.
   */
  coalesceMs?: number;
}


/** A document write as a row: its JSON made now (a document that cannot be stored fails its own commit). */
const rowNow = (w: DocWrite): RowWrite => ({ collection: w.collection, id: noNul(w.id), data: w.doc === null ? null : jsonbSafe(JSON.stringify(w.doc)), position: w.position ?? null });

interface Row {
  id: string;
  doc: Doc | null;
  expires_at: number | null;
  position: number | null;
}

export class PostgresReadStore implements ReadStore {
  readonly atomicCommits = true;
  private readonly findSql = new Map<string, string>();
  private nextPurge = 0;
  private readonly sql;
  /** With `coalesceMs`: the commits held (held-commits.ts, pending-writes.ts). */
  private readonly held: HeldCommits | null;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly schema: string,
    private readonly clock: () => number,
    coalesceMs: number,
    /** The finds' key column and the fields it holds per collection (see findKeys). */
    private readonly keys: ReturnType<typeof findKeys>,
  ) {
    this.held =
      coalesceMs > 0
        ? new HeldCommits(coalesceMs, (rows, checkpoints) => this.storeRows(rows.map((r) => (r.data === null ? r : { ...r, data: jsonbSafe(r.data) })), JSON.parse(checkpoints) as Record<string, number>), true)
        : null;
    const s = schema;
    this.sql = {
      get: `SELECT doc FROM ${s}.docs WHERE collection = $1 AND id = $2 AND (expires_at IS NULL OR expires_at > $3)`,
      versioned: `SELECT id, doc, expires_at, position FROM ${s}.docs WHERE collection = $1 AND id = ANY($2::text[])`,
      scan: `SELECT id, doc, position FROM ${s}.docs WHERE collection = $1 AND (expires_at IS NULL OR expires_at > $2) ORDER BY id`,
      // Deduplicated writes as arrays: upserts (a projector's only over an older position), plain deletes, checkpoints.
      commit: `WITH w AS (
          SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[]) AS w(collection, id, doc, expires_at, position)
        ), up AS (
          INSERT INTO ${s}.docs (collection, id, doc, expires_at, position)
          SELECT collection, id, doc::jsonb, expires_at, position FROM w WHERE doc IS NOT NULL
          ON CONFLICT (collection, id) DO UPDATE SET doc = excluded.doc, expires_at = excluded.expires_at, position = excluded.position
          WHERE excluded.position IS NULL OR docs.position IS NULL OR docs.position < excluded.position
          RETURNING 1
        ), del AS (
          DELETE FROM ${s}.docs d USING w WHERE w.doc IS NULL AND d.collection = w.collection AND d.id = w.id RETURNING 1
        ), cp AS (
          INSERT INTO ${s}.checkpoints (name, position) SELECT * FROM unnest($6::text[], $7::bigint[])
          ON CONFLICT (name) DO UPDATE SET position = GREATEST(checkpoints.position, excluded.position)
          RETURNING 1
        ) SELECT (SELECT count(*) FROM up) + (SELECT count(*) FROM del) + (SELECT count(*) FROM cp) AS n`,
      checkpoints: `SELECT name, position FROM ${s}.checkpoints WHERE name = ANY($1::text[])`,
      put: `INSERT INTO ${s}.docs (collection, id, doc, expires_at) VALUES ($1, $2, $3::jsonb, $4)
        ON CONFLICT (collection, id) DO UPDATE SET doc = excluded.doc, expires_at = excluded.expires_at, position = NULL`,
      insertIfAbsent: `INSERT INTO ${s}.docs (collection, id, doc, expires_at) VALUES ($1, $2, $3::jsonb, $4)
        ON CONFLICT (collection, id) DO UPDATE SET doc = excluded.doc, expires_at = excluded.expires_at, position = NULL
        WHERE docs.expires_at IS NOT NULL AND docs.expires_at <= $5`,
      delete: `DELETE FROM ${s}.docs WHERE collection = $1 AND id = $2`,
      purge: `DELETE FROM ${s}.docs WHERE expires_at IS NOT NULL AND expires_at <= $1`,
    };
  }

  /** Connects and creates the tables and the finds' indexes when missing. */
  static async open(url: string, options: PostgresReadStoreOptions = {}): Promise<PostgresReadStore> {
    const schema = schemaName(options.schema);
    // Commits are not waited for to reach disk: documents and checkpoints still commit (or are lost) together,
    // and a server crash that loses the last ones moves the checkpoints back with them: the projector applies
    // those events again from the log (as the embedded read store's synchronous=NORMAL). The event log waits.
    const pool = openPool(url, options.max ?? 6, { synchronous_commit: 'off' });
    const shapes = options.shapes ?? FIND_SHAPES;
    try {
      await migrate(pool, schema, docsDdl(schema, shapes));
    } catch (err) {
      await pool.end().catch(() => {});
      throw err;
    }
    return new PostgresReadStore(pool, schema, options.clock ?? Date.now, options.coalesceMs ?? 0, findKeys(shapes));
  }

  /** A query; with `deadline` (lookups on a request's path) gives up after ANSWER_MS: the server is unreachable. */
  private q<R extends pg.QueryResultRow>(name: keyof PostgresReadStore['sql'], values: unknown[], deadline = true) {
    return this.pool.query<R>(deadline ? timed({ name: `${this.schema}.${name}`, text: this.sql[name], values }) : { name: `${this.schema}.${name}`, text: this.sql[name], values });
  }

  async get<T extends Doc = Doc>(collection: string, id: string): Promise<T | null> {
    await this.settle((p) => p.holdsDocument(collection, noNul(id)));
    const r = await this.q<{ doc: T }>('get', [collection, noNul(id), this.clock()]);
    return r.rows[0]?.doc ?? null;
  }

  async getVersioned<T extends Doc = Doc>(collection: string, id: string): Promise<Versioned<T>> {
    return (await this.getVersionedMany<T>(collection, [id]))[0]!;
  }

  async getVersionedMany<T extends Doc = Doc>(collection: string, ids: readonly string[]): Promise<Versioned<T>[]> {
    if (ids.length === 0) return [];
    await this.settle((p) => p.holdsAnyOf(collection, ids.map(noNul)));
    const r = await this.q<Row>('versioned', [collection, [...new Set(ids.map(noNul))]]);
    const rows = new Map(r.rows.map((row) => [row.id, row]));
    const now = this.clock();
    return ids.map((id) => {
      const row = rows.get(noNul(id));
      if (!row) return { doc: null, position: 0 };
      const live = row.expires_at === null || row.expires_at > now;
      return { doc: live ? (row.doc as T) : null, position: row.position ?? 0 };
    });
  }

  async find<T extends Doc = Doc>(collection: string, where: Record<string, Scalar> = {}, options: FindOptions = {}): Promise<T[]> {
    if (options.limit === 0) return [];
    await this.settle((p) => p.holdsCollection(collection));
    const fields = Object.keys(where).sort();
    const nulls = fields.map((f) => where[f] === null);
    const order = options.orderBy;
    const key = JSON.stringify([collection, fields, nulls, order?.field, order?.direction, options.limit !== undefined]);
    let text = this.findSql.get(key);
    if (!text) {
      const values: string[] = [];
      // A null matches JSON null and a missing field, as the other adapters do.
      // A field the collection's finds index is read from the key column (the same value: see findKeys), where the indexes are.
      const keyed = this.keys.fields.get(collection);
      const of = (f: string) => `${keyed?.has(f) ? this.keys.column : 'doc'}->'${field(f)}'`;
      const conds = fields.map((f, i) => (nulls[i] ? `coalesce(${of(f)}, 'null') = 'null'` : `${of(f)} = $${values.push(f) + 1}::jsonb`));
      const by = order ? `(${of(order.field)}) ${order.direction === 'desc' ? 'DESC NULLS LAST' : 'ASC NULLS FIRST'}, id` : 'id';
      text =
        `SELECT doc FROM ${this.schema}.docs WHERE collection = ${literal(collection)} AND (expires_at IS NULL OR expires_at > $1)` +
        conds.map((c) => ` AND ${c}`).join('') +
        ` ORDER BY ${by}` +
        (options.limit !== undefined ? ` LIMIT $${values.length + 2}` : '');
      this.findSql.set(key, text);
    }
    const values: unknown[] = [this.clock(), ...fields.filter((f) => where[f] !== null).map((f) => jsonbSafe(JSON.stringify(where[f])))];
    if (options.limit !== undefined) values.push(options.limit);
    const r = await this.pool.query<{ doc: T }>(timed({ text, values }));
    return r.rows.map((row) => row.doc);
  }

  async scan(collection: string): Promise<{ id: string; doc: Doc; position?: number }[]> {
    await this.settle((p) => p.holdsCollection(collection));
    const r = await this.q<Row>('scan', [collection, this.clock()], false);
    return r.rows.map((row) => (row.position === null ? { id: row.id, doc: row.doc ?? {} } : { id: row.id, doc: row.doc ?? {}, position: row.position }));
  }

  async commit(writes: DocWrite[], checkpoints: Record<string, number>, options: CommitOptions = {}): Promise<void> {
    for (const w of writes) literal(w.collection);
    for (const n of Object.keys(checkpoints)) if (!n) throw new Error('empty checkpoint name');
    if (!this.held) return this.storeRows(writes.map(rowNow), checkpoints);
    // JSON first (or, for a frozen plain document, a check that its JSON cannot fail later): a
    // document that cannot be stored fails its commit, and nothing of it is kept.
    const rows: HeldRow[] = writes.map((w) =>
      w.doc !== null && jsonLater(w.doc) ? { collection: w.collection, id: noNul(w.id), data: undefined, doc: w.doc, position: w.position ?? null } : rowNow(w),
    );
    // `now`: stored before it resolves (with whatever was held before it, in order).
    return this.held.hold(rows, checkpoints, options.now);
  }

  /** Waits for the held writes to be stored when a read or direct write touches one of them. */
  private async settle(touches: (p: PendingWrites) => boolean): Promise<void> {
    if (this.held) await this.held.settle(touches);
  }

  /** One statement, so one transaction: documents (a projector's only over an older position), deletes, checkpoints. */
  private async storeRows(rows: RowWrite[], checkpoints: Record<string, number>): Promise<void> {
    const now = this.clock();
    // The last write of a document wins (a statement may touch a row once).
    const last = new Map<string, RowWrite>();
    for (const w of rows) {
      const k = `${w.collection}\u0000${w.id}`;
      last.delete(k);
      last.set(k, w);
    }
    const cols: [string[], string[], (string | null)[], (number | null)[], (number | null)[]] = [[], [], [], [], []];
    for (const w of last.values()) {
      cols[0].push(w.collection);
      cols[1].push(w.id);
      if (w.data !== null) {
        cols[2].push(w.data);
        cols[3].push(null);
      } else {
        // A projector's delete: a tombstone with its position, expired at once.
        cols[2].push(w.position === null ? null : 'null');
        cols[3].push(w.position === null ? null : now);
      }
      cols[4].push(w.position);
    }
    const names = Object.keys(checkpoints);
    if (cols[0].length === 0 && names.length === 0) return;
    await this.q('commit', [...cols, names, names.map((n) => checkpoints[n]!)], false);
    if (now >= this.nextPurge) {
      this.nextPurge = now + PURGE_EVERY_MS;
      await this.q('purge', [now - TOMBSTONE_KEEP_MS], false);
    }
  }

  async checkpoint(name: string): Promise<number> {
    await this.settle((p) => p.holdsCheckpoint([name]));
    const r = await this.q<{ position: number }>('checkpoints', [[name]]);
    return r.rows[0]?.position ?? 0;
  }

  async lowestCheckpoint(names: string[]): Promise<number> {
    if (names.length === 0) return 0;
    await this.settle((p) => p.holdsCheckpoint(names));
    const wanted = [...new Set(names)];
    const r = await this.q<{ position: number }>('checkpoints', [wanted]);
    return r.rows.length < wanted.length ? 0 : Math.min(...r.rows.map((row) => row.position));
  }

  async put(collection: string, id: string, doc: Doc, options: { expiresAt?: number } = {}): Promise<void> {
    literal(collection);
    await this.settle((p) => p.holdsDocument(collection, noNul(id)));
    await this.q('put', [collection, noNul(id), jsonbSafe(JSON.stringify(doc)), options.expiresAt ?? null]);
  }

  async insertIfAbsent(collection: string, id: string, doc: Doc, options: { expiresAt?: number } = {}): Promise<boolean> {
    literal(collection);
    await this.settle((p) => p.holdsDocument(collection, noNul(id)));
    const r = await this.q('insertIfAbsent', [collection, noNul(id), jsonbSafe(JSON.stringify(doc)), options.expiresAt ?? null, this.clock()]);
    return (r.rowCount ?? 0) > 0;
  }

  async delete(collection: string, id: string): Promise<void> {
    await this.settle((p) => p.holdsDocument(collection, noNul(id)));
    await this.q('delete', [collection, noNul(id)]);
  }

  async close(): Promise<void> {
    try {
      await this.held?.close();
    } finally {
      await this.pool.end();
    }
  }
}
