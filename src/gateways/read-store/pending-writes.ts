/**
 * A projector's commits held back and merged before they reach the file (SqliteReadStore's
 * `coalesceMs`): under load the same documents are written many times a second (an agent's record at
 * every break toggle, the dashboard's counters), and one transaction a few milliseconds later stores
 * each once, with the newest checkpoints. Merging keeps the outcome of the commits run one by one:
 * the later write of a document replaces the earlier, a projector's write never replaces one made at a
 * later position, and checkpoints only move forward.
 */
import type { RowWrite } from './sqlite-writes.js';

const key = (collection: string, id: string) => `${collection}\u0000${id}`;

export class PendingWrites {
  private readonly rows = new Map<string, RowWrite>();
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
  accepts(row: RowWrite): boolean {
    if (row.position === null) return true;
    const held = this.rows.get(key(row.collection, row.id));
    return held === undefined || held.position !== null;
  }

  /** Adds one commit's rows and checkpoints (each accepted). */
  add(rows: readonly RowWrite[], checkpoints: Record<string, number>): void {
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
    return { rows: [...this.rows.values()], checkpoints: JSON.stringify(Object.fromEntries(this.checkpoints)) };
  }
}
