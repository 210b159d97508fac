/**
 * Read store port: documents of read models, grouped in collections, plus projection checkpoints.
 *
 * The guarantee projections rely on: no event is applied twice to a document, across crashes and
 * with two projectors on one store (two processes on one DATA_DIR, each running its own). Each
 * document carries the log position that last wrote it (`DocWrite.position`, read back by
 * `getVersioned`), a write never replaces a document written at a later position, and a delete
 * leaves a tombstone with its position: a projector behind another skips, per document, the events
 * at or below its stored position. SQLite also commits documents and checkpoints in one transaction.
 * MongoDB has no multi-document transactions: the checkpoints are written after the documents, and
 * after a crash between the two the runner replays from the older checkpoint and skips as above.
 */

export type Doc = Record<string, unknown>;
export type Scalar = string | number | boolean | null;

export interface DocWrite {
  collection: string;
  id: string;
  /** null deletes the document. */
  doc: Doc | null;
  /**
   * Log position of the last event applied to this document (set by the projection runner).
   * An adapter without atomic commits stores it with the document (a delete keeps a tombstone with
   * it until the commit's checkpoints are stored) and ignores a write at or below the stored one.
   */
  position?: number;
}

export interface Versioned<T extends Doc = Doc> {
  /** null when absent, deleted or expired. */
  doc: T | null;
  /** Position of the last write that carried one; 0 when none did or the adapter commits atomically. */
  position: number;
}

export interface FindOptions {
  /** Sort by a top-level field; default: by id. */
  orderBy?: { field: string; direction?: 'asc' | 'desc' };
  limit?: number;
}

export interface CommitOptions {
  /**
   * Stored before the promise resolves, never held back to go with later commits (the SQLite and
   * PostgreSQL adapters' coalescing): for writes a killed process must not lose once it has acted on
   * them (the SIP switch's kept dialogs, a registration answered 200). MongoDB always stores at once.
   */
  now?: boolean;
}

export interface ReadStore {
  /**
   * Optional: true when `commit` is one transaction (documents and checkpoints together), so a hot
   * model loaded from the store and then kept by this process's commits is its projector's fold at its
   * checkpoint: a document absent from it is absent.
   */
  readonly atomicCommits?: boolean;
  get<T extends Doc = Doc>(collection: string, id: string): Promise<T | null>;
  /**
   * The document with the log position that last wrote it (0: none; a tombstone answers null with its
   * position): the runner skips events at or below it.
   */
  getVersioned<T extends Doc = Doc>(collection: string, id: string): Promise<Versioned<T>>;
  /** `getVersioned` of many ids at once, answered in their order (one query, not one per id). */
  getVersionedMany<T extends Doc = Doc>(collection: string, ids: readonly string[]): Promise<Versioned<T>[]>;
  /** Documents whose top-level fields equal every value of `where`. */
  find<T extends Doc = Doc>(collection: string, where?: Record<string, Scalar>, options?: FindOptions): Promise<T[]>;
  /**
   * Applies writes, then moves checkpoints forward (a checkpoint never moves back). A failure before
   * any write (e.g. a document that cannot be stored) writes nothing. Without a transaction, a crash
   * may leave documents written and checkpoints not: writes that carry positions make that safe.
   */
  commit(writes: DocWrite[], checkpoints: Record<string, number>, options?: CommitOptions): Promise<void>;
  /** Stored checkpoint of a projection (0 when it never ran). */
  checkpoint(name: string): Promise<number>;
  /**
   * The lowest stored checkpoint of the named projections (0 when one never ran, or none is named),
   * read in one query: read-your-writes polls it on every request of a process without the projector.
   */
  lowestCheckpoint(names: string[]): Promise<number>;
  /**
   * Writes auxiliary keyed data outside any projection (idempotency records): not derived from
   * events and not rebuilt by replay. `expiresAt` (epoch ms) lets the adapter drop it later.
   */
  put(collection: string, id: string, doc: Doc, options?: { expiresAt?: number }): Promise<void>;
  /** Stores `doc` only if no live document has this id; returns whether it was stored. */
  insertIfAbsent(collection: string, id: string, doc: Doc, options?: { expiresAt?: number }): Promise<boolean>;
  delete(collection: string, id: string): Promise<void>;
  /**
   * Optional: every live document of a collection with its id (loading a hot read model into
   * memory, src/gateways/read-store/hot.ts). An adapter without it is simply read per request.
   * `position` is what `getVersioned` would answer, where the adapter keeps one.
   */
  scan?(collection: string): Promise<{ id: string; doc: Doc; position?: number }[]>;
  close(): Promise<void>;
}

/** A read store that can answer from memory without a promise (the hot read models, hot.ts `peek`). */
export interface PeekableReads {
  /** undefined when the collection is not held in memory: ask the store. */
  peek<T extends Doc = Doc>(collection: string, id: string): T | null | undefined;
}

/** The store's `peek` where it has one, else null. */
export const peekable = (r: ReadStore): PeekableReads | null => (typeof (r as Partial<PeekableReads>).peek === 'function' ? (r as unknown as PeekableReads) : null);
