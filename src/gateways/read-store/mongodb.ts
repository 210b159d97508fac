/**
 * MongoDB read store, without multi-document transactions (a standalone server, a replica set or a
 * MongoDB-compatible service all do). One MongoDB collection per read-model collection; a stored
 * document is `{_id, d: <the document>, p?: <log position that last wrote it>, x?: <expiry date>}`,
 * and a projection's delete leaves the tombstone `{_id, p, del: true}`.
 *
 * Exactly once without transactions (see port.ts): a write from the projection runner carries its
 * position and only replaces a document stored at a lower one (a conditional upsert; the duplicate
 * key the server answers when the stored one is newer means "already applied"); the checkpoints are
 * written after the documents with `$max`, so they never move back; the tombstones of a commit are
 * removed once its checkpoints are stored (one left by a crash expires through the TTL index).
 *
 * Expiring records (`put`/`insertIfAbsent` with `expiresAt`) keep `x` as a Date under a TTL index, so
 * the server drops them; reads also hide them from the adapter's clock on, as the TTL monitor runs
 * only once a minute. `insertIfAbsent` relies on the unique `_id`.
 *
 * Queries match with MongoDB's semantics: an equality on a field that holds an array would also
 * match an element; the read models' filtered fields are scalars, so the SQLite adapter agrees.
 */
import { MongoBulkWriteError, MongoClient, MongoServerError, type AnyBulkWriteOperation, type Collection, type Db, type MongoClientOptions } from 'mongodb';
import type { Doc, DocWrite, FindOptions, ReadStore, Scalar, Versioned } from './port.js';
import { FIND_SHAPES, type FindShape } from './mongodb-indexes.js';

const FIELD = /^[A-Za-z_][A-Za-z0-9_]*$/;
const COLLECTION = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/;
const CHECKPOINTS = '_checkpoints';
const DUPLICATE_KEY = 11000;
/** A tombstone a crash left behind goes after this; the normal path removes it at once. */
const TOMBSTONE_TTL_MS = 7 * 24 * 3600_000;

interface Stored {
  _id: string;
  d?: Doc;
  p?: number;
  del?: true;
  x?: Date;
}

interface Checkpoint {
  _id: string;
  position: number;
}

export interface MongoReadStoreOptions {
  /** Database to use; default: the one named in the URL, else `telephony`. */
  dbName?: string;
  clock?: () => number;
  client?: MongoClientOptions;
  /** Find shapes to index at start (default: every find the platform makes). */
  shapes?: FindShape[];
}

export class MongoReadStore implements ReadStore {
  private readonly ttlIndexed = new Map<string, Promise<unknown>>();

  private constructor(
    private readonly client: MongoClient,
    private readonly db: Db,
    private readonly clock: () => number,
  ) {}

  /** Connects, checks the server answers, and creates the indexes the queries need. */
  static async open(url: string, options: MongoReadStoreOptions = {}): Promise<MongoReadStore> {
    const client = new MongoClient(url, { serverSelectionTimeoutMS: 10_000, ...options.client });
    try {
      await client.connect();
      const db = client.db(options.dbName ?? dbNameOf(url) ?? 'telephony');
      const store = new MongoReadStore(client, db, options.clock ?? Date.now);
      await store.createIndexes(options.shapes ?? FIND_SHAPES);
      return store;
    } catch (err) {
      await client.close().catch(() => {});
      throw err;
    }
  }

  private async createIndexes(shapes: FindShape[]) {
    const byCollection = new Map<string, Map<string, Record<string, 1 | -1>>>();
    for (const s of shapes) {
      const key: Record<string, 1 | -1> = {};
      for (const f of s.equal) key[`d.${checkField(f)}`] = 1;
      if (s.sort && !s.equal.includes(s.sort[0])) key[`d.${checkField(s.sort[0])}`] = s.sort[1];
      key._id = 1;
      const specs = byCollection.get(s.collection) ?? new Map();
      specs.set(JSON.stringify(key), key);
      byCollection.set(s.collection, specs);
    }
    await Promise.all(
      [...byCollection].map(([c, specs]) => this.coll(c).createIndexes([...specs.values()].map((key) => ({ key })))),
    );
  }

  /** The TTL index on `x`, created the first time a collection stores something that expires. */
  private ensureTtl(collection: string): Promise<unknown> {
    let p = this.ttlIndexed.get(collection);
    if (!p) {
      p = this.coll(collection).createIndex({ x: 1 }, { expireAfterSeconds: 0 });
      p.catch(() => this.ttlIndexed.delete(collection));
      this.ttlIndexed.set(collection, p);
    }
    return p;
  }

  private coll(name: string): Collection<Stored> {
    if (!COLLECTION.test(name) || name.startsWith('system.')) throw new Error(`bad collection name ${name}`);
    return this.db.collection<Stored>(name);
  }

  /** Filter for documents that are neither tombstones nor expired at the adapter's clock. */
  private live() {
    return { del: { $ne: true as const }, $or: [{ x: { $exists: false } }, { x: { $gt: new Date(this.clock()) } }] };
  }

  async get<T extends Doc = Doc>(collection: string, id: string): Promise<T | null> {
    const found = await this.coll(collection).findOne({ _id: id, ...this.live() }, { projection: { d: 1 } });
    return found ? ((found.d ?? null) as T | null) : null;
  }

  async getVersioned<T extends Doc = Doc>(collection: string, id: string): Promise<Versioned<T>> {
    return this.versioned<T>(await this.coll(collection).findOne({ _id: id }));
  }

  async getVersionedMany<T extends Doc = Doc>(collection: string, ids: readonly string[]): Promise<Versioned<T>[]> {
    if (ids.length === 0) return [];
    const found = new Map((await this.coll(collection).find({ _id: { $in: [...ids] } }).toArray()).map((s) => [s._id, s]));
    return ids.map((id) => this.versioned<T>(found.get(id) ?? null));
  }

  private versioned<T extends Doc>(found: Stored | null): Versioned<T> {
    if (!found) return { doc: null, position: 0 };
    const live = !found.del && (!found.x || found.x.getTime() > this.clock());
    return { doc: live ? ((found.d ?? null) as T | null) : null, position: found.p ?? 0 };
  }

  async find<T extends Doc = Doc>(collection: string, where: Record<string, Scalar> = {}, options: FindOptions = {}): Promise<T[]> {
    const filter: Record<string, unknown> = {};
    for (const [f, v] of Object.entries(where)) filter[`d.${checkField(f)}`] = v;
    const sort: Record<string, 1 | -1> = {};
    if (options.orderBy) sort[`d.${checkField(options.orderBy.field)}`] = options.orderBy.direction === 'desc' ? -1 : 1;
    sort._id = 1;
    // MongoDB reads limit 0 as "no limit".
    if (options.limit === 0) return [];
    let cursor = this.coll(collection).find({ ...filter, ...this.live() }, { sort, projection: { d: 1 } });
    if (options.limit !== undefined) cursor = cursor.limit(options.limit);
    return (await cursor.toArray()).map((s) => s.d as T);
  }

  /** Every live document of a collection with its position (a hot read model loads this). */
  async scan(collection: string): Promise<{ id: string; doc: Doc; position?: number }[]> {
    const all = await this.coll(collection).find(this.live(), { sort: { _id: 1 } }).toArray();
    return all.map((s) => ({ id: s._id, doc: (s.d ?? {}) as Doc, position: s.p }));
  }

  async commit(writes: DocWrite[], checkpoints: Record<string, number>): Promise<void> {
    // Everything is encoded before anything is written: a document that cannot be stored fails the
    // commit with nothing written.
    const ops = new Map<string, { ops: AnyBulkWriteOperation<Stored>[]; guarded: boolean[]; tombstones: string[] }>();
    for (const w of writes) {
      const entry = ops.get(w.collection) ?? { ops: [], guarded: [], tombstones: [] };
      ops.set(w.collection, entry);
      this.coll(w.collection);
      if (w.position === undefined) {
        entry.guarded.push(false);
        entry.ops.push(
          w.doc === null
            ? { deleteOne: { filter: { _id: w.id } } }
            : { replaceOne: { filter: { _id: w.id }, replacement: { d: encode(w.doc) }, upsert: true } },
        );
        continue;
      }
      // Replaces only a document written at a lower position (or by no projection); when a newer one
      // is stored, the upsert collides with its _id and the server answers a duplicate key.
      const replacement: Omit<Stored, '_id'> =
        w.doc === null ? { p: w.position, del: true, x: new Date(this.clock() + TOMBSTONE_TTL_MS) } : { d: encode(w.doc), p: w.position };
      if (w.doc === null) entry.tombstones.push(w.id);
      entry.guarded.push(true);
      entry.ops.push({ replaceOne: { filter: { _id: w.id, $or: [{ p: { $exists: false } }, { p: { $lt: w.position } }] }, replacement, upsert: true } });
    }
    for (const name of Object.keys(checkpoints)) if (!name) throw new Error('empty checkpoint name');

    for (const [c, e] of ops) if (e.tombstones.length) await this.ensureTtl(c);
    const results = await Promise.allSettled([...ops].map(([c, e]) => this.coll(c).bulkWrite(e.ops, { ordered: false })));
    const entries = [...ops.values()];
    results.forEach((r, i) => {
      if (r.status === 'fulfilled') return;
      const err = r.reason;
      if (err instanceof MongoBulkWriteError) {
        const errors = Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors];
        const fatal = errors.filter((we) => !(we.code === DUPLICATE_KEY && entries[i]!.guarded[we.index]));
        if (fatal.length === 0 && errors.length > 0 && !err.writeConcernError) return;
      }
      throw err;
    });

    // Only now the checkpoints: a crash before this line leaves documents ahead of them, which the
    // positions above make safe to replay.
    const names = Object.keys(checkpoints);
    if (names.length === 0) return;
    await this.db.collection<Checkpoint>(CHECKPOINTS).bulkWrite(
      names.map((name) => ({ updateOne: { filter: { _id: name }, update: { $max: { position: checkpoints[name]! } }, upsert: true } })),
      { ordered: false },
    );
    // Replay now starts past these tombstones: they have done their work.
    const covered = Math.min(...Object.values(checkpoints));
    await Promise.all(
      [...ops]
        .filter(([, e]) => e.tombstones.length)
        .map(([c, e]) => this.coll(c).deleteMany({ _id: { $in: e.tombstones }, del: true, p: { $lte: covered } })),
    );
  }

  async checkpoint(name: string): Promise<number> {
    const found = await this.db.collection<Checkpoint>(CHECKPOINTS).findOne({ _id: name });
    return found?.position ?? 0;
  }

  async lowestCheckpoint(names: string[]): Promise<number> {
    if (names.length === 0) return 0;
    const wanted = [...new Set(names)];
    const found = await this.db.collection<Checkpoint>(CHECKPOINTS).find({ _id: { $in: wanted } }).toArray();
    if (found.length < wanted.length) return 0;
    return Math.min(...found.map((c) => c.position));
  }

  async put(collection: string, id: string, doc: Doc, options: { expiresAt?: number } = {}): Promise<void> {
    const stored: Omit<Stored, '_id'> = { d: encode(doc) };
    if (options.expiresAt !== undefined) {
      stored.x = new Date(options.expiresAt);
      await this.ensureTtl(collection);
    }
    await this.coll(collection).replaceOne({ _id: id }, stored, { upsert: true });
  }

  async insertIfAbsent(collection: string, id: string, doc: Doc, options: { expiresAt?: number } = {}): Promise<boolean> {
    const stored: Omit<Stored, '_id'> = { d: encode(doc) };
    if (options.expiresAt !== undefined) {
      stored.x = new Date(options.expiresAt);
      await this.ensureTtl(collection);
    }
    try {
      // Replaces only a tombstone or an expired record; a live one makes the upsert collide on _id.
      await this.coll(collection).replaceOne(
        { _id: id, $or: [{ del: true }, { x: { $lte: new Date(this.clock()) } }] },
        stored,
        { upsert: true },
      );
      return true;
    } catch (err) {
      if (err instanceof MongoServerError && err.code === DUPLICATE_KEY) return false;
      throw err;
    }
  }

  async delete(collection: string, id: string): Promise<void> {
    await this.coll(collection).deleteOne({ _id: id });
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

function checkField(f: string): string {
  if (!FIELD.test(f)) throw new Error(`bad field name ${f}`);
  return f;
}

/** Documents are JSON, as in the SQLite adapter: what a JSON round trip would not keep is not kept. */
function encode(doc: Doc): Doc {
  return JSON.parse(JSON.stringify(doc)) as Doc;
}

/** The database named in a connection string's path, if any. */
export function dbNameOf(url: string): string | undefined {
  const m = /^mongodb(?:\+srv)?:\/\/[^/?]*\/([^?]+)/.exec(url);
  return m ? decodeURIComponent(m[1]!) : undefined;
}
