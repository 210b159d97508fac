/**
 * A projector's commits held back and merged before they reach the file (SqliteReadStore's
 * `coalesceMs`): under load the same documents are written many times a second (an agent's record at
 * every break toggle, the dashboard's counters), and one transaction a few milliseconds later stores
 * each once, with the newest checkpoints. Merging keeps the outcome of the commits run one by one:
 * the later write of a document replaces the earlier, a projector's write never replaces one made at a
 * later position, and checkpoints only move forward.
 */
import type { Doc, Versioned } from './port.js';
import type { RowWrite } from './sqlite-writes.js';

const key = (collection: string, id: string) => `${collection}\u0000${id}`;

/**
 * A held write: its JSON made now, or (`data` undefined) made when it is stored from `doc`, a document
 * that `jsonLater` accepted. A document written many times while held is then made JSON once.
 */
export type HeldRow = RowWrite | (Omit<RowWrite, 'data'> & { data: undefined; doc: Doc });

/**
 * Whether `doc`'s JSON may be made later with the same outcome as now: frozen all through (nothing
 * can change it: the hot read models freeze what the projector writes), plain objects and arrays of
 * strings, numbers, booleans and nulls only (so JSON.stringify cannot throw: no toJSON, no BigInt, no
 * cycle). Anything else is made JSON at once, so a document that cannot be stored still fails its own
 * commit. (A frozen document's getter, which no projection makes, would be read when it is stored.)
 * ~0.2 µs for an agent's record, against ~1.1 µs for its JSON.
 */
export function jsonLater(doc: Doc): boolean {
  return plainFrozen(doc, 0);
}

const MAX_DEPTH = 32;

function plainFrozen(v: unknown, depth: number): boolean {
  if (v === null) return true;
  switch (typeof v) {
    case 'string':
    case 'number':
    case 'boolean':
    case 'undefined': // left out (or null in an array) now as later
      return true;
    case 'object': {
      // Past the depth (a cycle, most likely): JSON now, which throws for a cycle as it always did.
      if (depth >= MAX_DEPTH || !Object.isFrozen(v)) return false;
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) if (!plainFrozen(v[i], depth + 1)) return false;
        return true;
      }
      const proto: unknown = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) return false;
      for (const k in v) if (!plainFrozen((v as Record<string, unknown>)[k], depth + 1)) return false;
      return true;
    }
    default:
      return false;
  }
}

export class PendingWrites {
  private readonly rows = new Map<string, HeldRow>();
  private readonly checkpoints = new Map<string, number>();
  /** Pending rows per collection: a `find` or `scan` of one waits for them to be stored. */
  private readonly perCollection = new Map<string, number>();

  get size(): number {
    return this.rows.size + this.checkpoints.size;
  }

  /**
   * Whether `row` can join: not when it carries a position and the pending write of its document does
   * not (an unconditional write makes the stored row's position NULL, which a merged write would not
   * see). The caller stores what is pending first, then adds it.
   */
  accepts(row: HeldRow): boolean {
    if (row.position === null) return true;
    const held = this.rows.get(key(row.collection, row.id));
    return held === undefined || held.position !== null;
  }

  /** Adds one commit's rows and checkpoints (each accepted). */
  add(rows: readonly HeldRow[], checkpoints: Record<string, number>): void {
    for (const row of rows) {
      const k = key(row.collection, row.id);
      const held = this.rows.get(k);
      // A projector's write at or below the held one would not have landed after it.
      if (held && held.position !== null && row.position !== null && row.position <= held.position) continue;
      if (!held) this.perCollection.set(row.collection, (this.perCollection.get(row.collection) ?? 0) + 1);
      // Delete and re-insert: rows are stored in the order they were last written.
      this.rows.delete(k);
      this.rows.set(k, row);
    }
    for (const [name, position] of Object.entries(checkpoints)) {
      if (position > (this.checkpoints.get(name) ?? -Infinity)) this.checkpoints.set(name, position);
    }
  }

  /**
   * The held write of a document (undefined: none), so a read answers from it without storing what is
   * held. A JSON left for later is made now, once: the store then uses it.
   */
  held(collection: string, id: string): RowWrite | undefined {
    const k = key(collection, id);
    const r = this.rows.get(k);
    if (r === undefined || r.data !== undefined) return r;
    const row: RowWrite = { collection: r.collection, id: r.id, data: JSON.stringify(r.doc), position: r.position };
    this.rows.set(k, row); // the same place in the order: an existing key keeps it
    return row;
  }

  holdsDocument(collection: string, id: string): boolean {
    return this.rows.has(key(collection, id));
  }

  holdsAnyOf(collection: string, ids: readonly string[]): boolean {
    if (!this.perCollection.has(collection)) return false;
    return ids.some((id) => this.rows.has(key(collection, id)));
  }

  holdsCollection(collection: string): boolean {
    return this.perCollection.has(collection);
  }

  holdsCheckpoint(names: readonly string[]): boolean {
    return names.some((n) => this.checkpoints.has(n));
  }

  /** Puts newer writes (made while these were being stored, which failed) after these. */
  absorb(newer: PendingWrites): void {
    this.add([...newer.rows.values()], Object.fromEntries(newer.checkpoints));
  }

  /** What to store, in one transaction: the rows and the checkpoints as JSON. */
  take(): { rows: RowWrite[]; checkpoints: string } {
    const rows: RowWrite[] = [];
    for (const r of this.rows.values()) rows.push(r.data !== undefined ? r : { collection: r.collection, id: r.id, data: JSON.stringify(r.doc), position: r.position });
    return { rows, checkpoints: JSON.stringify(Object.fromEntries(this.checkpoints)) };
  }
}

/** A read that must wait for the held writes to be stored (readHeld). */
export const WAIT = Symbol('wait');

/**
 * A document's held write as a read would find it once stored, so the read need not store what is
 * held first (a read of a document just written, e.g. a call's record by the hangup that follows its
 * bridging, stored every held write at once and left little to coalesce). undefined: not held; WAIT:
 * the read waits for the store as before (the write is in flight on the writer thread, or it is a
 * projector's write that the stored row, at `storedPosition` or later, would keep from landing).
 */
export function readHeld(pending: PendingWrites, storing: PendingWrites | null, collection: string, id: string, storedPosition: () => number | null | undefined): RowWrite | typeof WAIT | undefined {
  if (storing !== null && storing.holdsDocument(collection, id)) return WAIT;
  const row = pending.held(collection, id);
  if (row === undefined || row.position === null) return row;
  const stored = storedPosition();
  return stored !== null && stored !== undefined && stored >= row.position ? WAIT : row;
}

/** A held write as getVersioned answers it: a delete or tombstone is null, at the write's position (0: none). */
export const heldVersioned = <T extends Doc>(row: RowWrite): Versioned<T> => ({ doc: row.data === null ? null : (JSON.parse(row.data) as T), position: row.position ?? 0 });
