/**
 * Read store port: documents of read models, grouped in collections, plus projection checkpoints.
 *
 * The guarantee projections rely on: `commit` writes documents and advances checkpoints as one
 * unit, so after a crash a projection resumes from a checkpoint that matches its documents and no
 * event is applied twice. (SQLite: one transaction. MongoDB: a transaction where the deployment
 * supports it, otherwise each document carries the position that last wrote it and writes are
 * guarded by it, with the checkpoint written after the documents.)
 */

export type Doc = Record<string, unknown>;
export type Scalar = string | number | boolean | null;

export interface DocWrite {
  collection: string;
  id: string;
  /** null deletes the document. */
  doc: Doc | null;
}

export interface FindOptions {
  /** Sort by a top-level field; default: by id. */
  orderBy?: { field: string; direction?: 'asc' | 'desc' };
  limit?: number;
}

export interface ReadStore {
  get<T extends Doc = Doc>(collection: string, id: string): Promise<T | null>;
  /** Documents whose top-level fields equal every value of `where`. */
  find<T extends Doc = Doc>(collection: string, where?: Record<string, Scalar>, options?: FindOptions): Promise<T[]>;
  /** Applies writes and moves checkpoints forward atomically (a checkpoint never moves back). */
  commit(writes: DocWrite[], checkpoints: Record<string, number>): Promise<void>;
  /** Stored checkpoint of a projection (0 when it never ran). */
  checkpoint(name: string): Promise<number>;
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
   */
  scan?(collection: string): Promise<{ id: string; doc: Doc }[]>;
  close(): Promise<void>;
}
