/**
 * Hot read models: a ReadStore decorator that answers chosen collections from memory. Each hot
 * collection is loaded whole on first use and then kept current by the writes that pass through this
 * store (the projector's commits in this process), so the hot queries (auth lookups, agents, the
 * dashboard, free agents) parse nothing and touch no file.
 *
 * Only correct where every write to those collections goes through this instance: the process that
 * runs the projector. A process without it reads the store (see platform.ts). Documents handed out
 * are frozen: they are shared, and a caller changing one would change the model.
 */
import type { CommitOptions, Doc, DocWrite, FindOptions, ReadStore, Scalar, Versioned } from './port.js';
import { CollectionIndexes, questionKey } from './hot-index.js';

type Collection = Map<string, Doc>;

/** Distinct `find` questions per collection whose answers are kept (a few per service in practice). */
const MAX_FOUND = 1000;
/** Documents of other collections the projector last wrote, kept for its next read of each (a burst of deliveries or calls). */
export const WRITTEN_MAX = 20_000;

export class HotReadStore implements ReadStore {
  private readonly loaded = new Map<string, Collection>();
  /** Per hot collection, the log position each document was last written at (where the store keeps one). */
  private readonly positions = new Map<string, Map<string, number>>();
  private readonly loading = new Map<string, { promise: Promise<Collection>; writes: DocWrite[] }>();
  /** Answers of `find` (an index lookup and a sort) kept until their collection is next written. */
  private readonly found = new Map<string, Map<string, Doc[]>>();
  /** Per loaded hot collection, the equality indexes `find` built (see hot-index.ts). */
  private readonly indexes = new Map<string, CollectionIndexes>();
  /** Per hot collection, how many writes have passed (see `version`). */
  private readonly versions = new Map<string, number>();
  /**
   * Write-through for the collections that are not hot: the documents the projector committed last
   * (by `collection\0id`, oldest first, at most WRITTEN_MAX), with the positions they were written
   * at. The projector reads a document back before each event that changes it (a delivery's request,
   * then its attempt, a call's events): those reads need no query and no parse. Only the projector's
   * commits fill it; what else writes a document here drops it. A document it holds is the projector's
   * own fold of the log up to that position, so it stays right when another process on the same
   * DATA_DIR writes the same document: that one folds the same events to the same document.
   */
  private readonly written = new Map<string, Versioned>();
  /**
   * `written`'s entries oldest first, from `oldest` on; one is still in force while `written` holds
   * that very object. The oldest is found here, not as the Map's first key: after each delete at its
   * front a Map's next first key is found by walking past the holes the deletes left (V8 compacts a
   * Map only as it grows), which took seconds of the platform thread for a 100,000-contact upload.
   */
  private order: Array<readonly [string, Versioned]> = [];
  private oldest = 0;

  constructor(
    readonly inner: ReadStore,
    private readonly hot: ReadonlySet<string>,
  ) {
    if (!inner.scan) throw new Error('hot read models need a read store that can scan a collection');
  }

  scan(collection: string): Promise<{ id: string; doc: Doc; position?: number }[]> {
    return this.inner.scan!(collection);
  }

  private async collection(name: string): Promise<Collection> {
    const ready = this.loaded.get(name);
    if (ready) return ready;
    let l = this.loading.get(name);
    if (!l) {
      const writes: DocWrite[] = [];
      const promise = this.inner.scan!(name).then((entries) => {
        const c: Collection = new Map();
        const positions = new Map<string, number>();
        for (const { id, doc, position } of entries) {
          c.set(id, freeze(doc));
          if (position) positions.set(id, position);
        }
        this.positions.set(name, positions);
        // Writes that passed while the load was in flight are newer than what it read.
        for (const w of writes) apply(c, positions, w);
        this.loaded.set(name, c);
        this.loading.delete(name);
        return c;
      });
      promise.catch(() => this.loading.delete(name));
      l = { promise, writes };
      this.loading.set(name, l);
    }
    return l.promise;
  }

  private remember(w: DocWrite) {
    if (!this.hot.has(w.collection)) return;
    this.versions.set(w.collection, (this.versions.get(w.collection) ?? 0) + 1);
    this.found.delete(w.collection);
    const c = this.loaded.get(w.collection);
    if (c) {
      this.indexes.get(w.collection)?.written(w.id, c.get(w.id), w.doc === null ? null : freeze(w.doc));
      apply(c, this.positions.get(w.collection)!, w);
    } else this.loading.get(w.collection)?.writes.push(w);
  }

  /**
   * A counter of the writes to a hot collection that passed here: an answer computed from it stays
   * true while the counter has not moved (answer caches compare it; read it before reading the data).
   */
  version(collection: string): number {
    return this.versions.get(collection) ?? 0;
  }

  /** `get` without a promise, for hot paths: undefined when the collection is not hot or not loaded yet. */
  peek<T extends Doc = Doc>(collection: string, id: string): T | null | undefined {
    if (!this.hot.has(collection)) return undefined;
    const c = this.loaded.get(collection);
    return c === undefined ? undefined : ((c.get(id) as T | undefined) ?? null);
  }

  async get<T extends Doc = Doc>(collection: string, id: string): Promise<T | null> {
    if (!this.hot.has(collection)) return this.inner.get<T>(collection, id);
    const c = this.loaded.get(collection) ?? (await this.collection(collection));
    return (c.get(id) as T | undefined) ?? null;
  }

  /**
   * A document in memory answers with its remembered position. A miss asks the store (it may hold a
   * tombstone) unless its commits are atomic: the collection in memory is then what the store held when
   * it was loaded plus this projector's own fold since, so a document absent from it is absent for
   * this projector (each call's end asks two hot models about its id). A tombstone another process
   * left meanwhile still keeps its write from landing (the store's writes are conditional).
   */
  async getVersioned<T extends Doc = Doc>(collection: string, id: string): Promise<Versioned<T>> {
    if (this.hot.has(collection) && !this.loaded.has(collection)) await this.collection(collection);
    return this.fromMemory<T>(collection, id) ?? this.inner.getVersioned<T>(collection, id);
  }

  /** As getVersioned for each id; what memory cannot answer is asked of the store in one query. */
  async getVersionedMany<T extends Doc = Doc>(collection: string, ids: readonly string[]): Promise<Versioned<T>[]> {
    if (this.hot.has(collection) && !this.loaded.has(collection)) await this.collection(collection);
    const out = ids.map((id) => this.fromMemory<T>(collection, id));
    const missing = ids.filter((_, i) => out[i] === undefined);
    if (missing.length > 0) {
      const asked = await this.inner.getVersionedMany<T>(collection, missing);
      let k = 0;
      for (let i = 0; i < out.length; i++) if (out[i] === undefined) out[i] = asked[k++];
    }
    return out as Versioned<T>[];
  }

  /** What getVersioned answers from memory (a hot collection is loaded), or undefined where it asks the store. */
  private fromMemory<T extends Doc>(collection: string, id: string): Versioned<T> | undefined {
    if (!this.hot.has(collection)) return this.written.get(writtenKey(collection, id)) as Versioned<T> | undefined;
    const doc = this.loaded.get(collection)!.get(id) as T | undefined;
    if (doc === undefined && !this.inner.atomicCommits) return undefined;
    return { doc: doc ?? null, position: this.positions.get(collection)?.get(id) ?? 0 };
  }

  async find<T extends Doc = Doc>(collection: string, where: Record<string, Scalar> = {}, options: FindOptions = {}): Promise<T[]> {
    if (!this.hot.has(collection)) return this.inner.find<T>(collection, where, options);
    const c = this.loaded.get(collection) ?? (await this.collection(collection));
    const fields = Object.keys(where);
    if (fields.length > 1) sortNames(fields);
    let indexes = this.indexes.get(collection);
    if (!indexes) this.indexes.set(collection, (indexes = new CollectionIndexes()));
    const matched = indexes.matching(c, where, fields);
    // At most one match (an agent by number, a user by name): nothing to order, nothing worth
    // keeping. Answered before a question key is built, as every write of the collection (each
    // command on an agent) voids the kept answers.
    if (matched.size <= 1 && (options.limit === undefined || options.limit >= 1)) {
      return matched.size === 0 ? [] : [matched.values().next().value as T];
    }
    const key = questionKey(where, fields, options);
    let answers = this.found.get(collection);
    const known = answers?.get(key);
    // A copy: callers may sort or cut the array they get.
    if (known) return known.slice() as T[];
    const out: { id: string; doc: Doc }[] = [];
    for (const [id, doc] of matched) out.push({ id, doc });
    const order = options.orderBy;
    // The SQLite adapter's order: by id, or by the field (NULL < numbers < text) then id.
    if (order) {
      const dir = order.direction === 'desc' ? -1 : 1;
      out.sort((a, b) => dir * compareSql(a.doc[order.field], b.doc[order.field]) || compareText(a.id, b.id));
    } else out.sort((a, b) => compareText(a.id, b.id));
    const docs = (options.limit !== undefined ? out.slice(0, options.limit) : out).map((x) => x.doc as T);
    if (!answers) this.found.set(collection, (answers = new Map()));
    if (answers.size >= MAX_FOUND) answers.clear();
    answers.set(key, docs);
    return docs.slice();
  }

  async commit(writes: DocWrite[], checkpoints: Record<string, number>, options?: CommitOptions): Promise<void> {
    // Frozen before the store sees them, as they would be after (remember, writeThrough): a store
    // that holds writes back may then make their JSON once, when it stores them (pending-writes.ts).
    for (const w of writes) if (w.doc !== null && (w.position !== undefined || this.hot.has(w.collection))) freeze(w.doc);
    try {
      await this.inner.commit(writes, checkpoints, options);
    } catch (err) {
      // Some of it may be stored (a store without transactions): the next reads ask the store.
      for (const w of writes) this.written.delete(writtenKey(w.collection, w.id));
      throw err;
    }
    for (const w of writes) {
      this.remember(w);
      if (!this.hot.has(w.collection)) this.writeThrough(w);
    }
  }

  private writeThrough(w: DocWrite) {
    const key = writtenKey(w.collection, w.id);
    this.written.delete(key);
    // Only a projector's write (it carries its position); a frozen document, as the runner folds on it.
    if (w.position === undefined) return;
    const entry: Versioned = { doc: freeze(w.doc), position: w.position };
    this.written.set(key, entry);
    this.order.push([key, entry]);
    if (this.written.size > WRITTEN_MAX) {
      while (this.oldest < this.order.length) {
        const [k, e] = this.order[this.oldest++]!;
        if (this.written.get(k) === e) {
          this.written.delete(k);
          break;
        }
      }
    }
    // Entries no longer in force (written again, dropped) are let go now and then: O(1) a write.
    if (this.oldest > WRITTEN_MAX || this.order.length - this.oldest > 2 * WRITTEN_MAX) {
      this.order = this.order.slice(this.oldest).filter(([k, e]) => this.written.get(k) === e);
      this.oldest = 0;
    }
  }

  checkpoint(name: string): Promise<number> {
    return this.inner.checkpoint(name);
  }

  lowestCheckpoint(names: string[]): Promise<number> {
    return this.inner.lowestCheckpoint(names);
  }

  async put(collection: string, id: string, doc: Doc, options?: { expiresAt?: number }): Promise<void> {
    if (this.hot.has(collection) && options?.expiresAt !== undefined) throw new Error(`hot collection ${collection} keeps no expiring documents`);
    await this.inner.put(collection, id, doc, options).finally(() => this.written.delete(writtenKey(collection, id)));
    this.remember({ collection, id, doc });
  }

  async insertIfAbsent(collection: string, id: string, doc: Doc, options?: { expiresAt?: number }): Promise<boolean> {
    if (this.hot.has(collection)) throw new Error(`insertIfAbsent on hot collection ${collection}`);
    return this.inner.insertIfAbsent(collection, id, doc, options).finally(() => this.written.delete(writtenKey(collection, id)));
  }

  async delete(collection: string, id: string): Promise<void> {
    await this.inner.delete(collection, id).finally(() => this.written.delete(writtenKey(collection, id)));
    this.remember({ collection, id, doc: null });
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

/** In place, for the few fields of a question: Array.prototype.sort copies the array first (it showed in allocation profiles). */
function sortNames(names: string[]) {
  for (let i = 1; i < names.length; i++) {
    const name = names[i]!;
    let j = i - 1;
    for (; j >= 0 && names[j]! > name; j--) names[j + 1] = names[j]!;
    names[j + 1] = name;
  }
}

const writtenKey = (collection: string, id: string) => `${collection}\u0000${id}`;

function apply(c: Collection, positions: Map<string, number>, w: DocWrite) {
  if (w.doc === null) c.delete(w.id);
  else c.set(w.id, freeze(w.doc));
  if (w.position !== undefined) positions.set(w.id, w.position);
}

const rank = (v: unknown) => (v === null || v === undefined ? 0 : typeof v === 'number' || typeof v === 'boolean' ? 1 : typeof v === 'string' ? 2 : 3);
function compareSql(a: unknown, b: unknown): number {
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra - rb;
  if (ra === 1) return Number(a) - Number(b);
  if (ra === 2) return compareText(a as string, b as string);
  return 0;
}
const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function freeze<T>(o: T): T {
  if (o && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) freeze(v);
  }
  return o;
}
