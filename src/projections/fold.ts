/**
 * Replay's document fold: projections applied in memory, one map per collection by id, and every
 * document written once at the end into a fresh store. Past a bound the documents held are spilled
 * to that store and read back from it when touched again (logs bigger than memory).
 */
import type { RecordedEvent } from '../gateways/event-store/port.js';
import type { Doc, DocWrite } from '../gateways/read-store/port.js';
import type { SqliteReadStore } from '../gateways/read-store/sqlite.js';
import { collectionOf, type Projection } from './projection.js';

interface Fold {
  p: Projection<any>;
  collection: string;
  /** By id; null: deleted. */
  docs: Map<string, Doc | null>;
}

/** The event types that can change a document of `projections` (whose data they read), or null for any. */
export function foldTypes(projections: Projection<any>[]): string[] | null {
  const all = new Set<string>();
  for (const p of projections) {
    if (!p.canHandle) return null;
    for (const t of p.canHandle) all.add(t);
  }
  return [...all];
}

export class DocumentFold {
  private readonly docs = new Map<string, Map<string, Doc | null>>();
  private readonly folds: Fold[];
  private readonly byType = new Map<string, Fold[]>();
  private held = 0;
  private spilled = false;

  constructor(
    projections: Projection<any>[],
    private readonly staged: SqliteReadStore,
  ) {
    for (const p of projections) if (!this.docs.has(collectionOf(p))) this.docs.set(collectionOf(p), new Map());
    this.folds = projections.map((p) => ({ p, collection: collectionOf(p), docs: this.docs.get(collectionOf(p))! }));
  }

  get collections(): string[] {
    return [...this.docs.keys()];
  }

  /** A document as the events applied so far left it: null deleted, undefined not held here. */
  readonly current = (collection: string, id: string): Doc | null | undefined => this.docs.get(collection)?.get(id);

  /** The event types that can change a document here (whose data it reads), or null for any. */
  get types(): string[] | null {
    return foldTypes(this.folds.map(({ p }) => p));
  }

  /** The folds an event of `type` can change (each projection's `canHandle`, asked once per type). */
  private foldsOf(type: string): Fold[] {
    let f = this.byType.get(type);
    if (!f) this.byType.set(type, (f = this.folds.filter(({ p }) => !p.canHandle || p.canHandle.includes(type))));
    return f;
  }

  apply(e: RecordedEvent): void {
    const touching = this.foldsOf(e.type);
    for (let f = 0; f < touching.length; f++) {
      const { p, collection, docs } = touching[f]!;
      const ids = p.keys(e);
      for (let i = 0; i < ids.length; i++) {
        const id = ids[i]!;
        let doc = docs.get(id);
        const held = doc !== undefined;
        if (!held) doc = this.spilled ? this.staged.getNow(collection, id) : null;
        const next = p.evolve(doc ?? null, e, id);
        // Nothing is stored before a spill: a deleted document is simply forgotten (calls in the IVR,
        // in a queue, in progress are many and short-lived). After one, null marks a delete to write.
        if (next === null && !this.spilled) {
          if (held) {
            docs.delete(id);
            this.held--;
          }
        } else {
          if (!held) this.held++;
          docs.set(id, next);
        }
      }
    }
  }

  private writes(): DocWrite[] {
    const writes: DocWrite[] = [];
    for (const [collection, byId] of this.docs) for (const [id, doc] of byId) writes.push({ collection, id, doc });
    return writes;
  }

  /** Spills the documents held to the store once there are more than `maxDocs`. */
  async bound(maxDocs: number): Promise<void> {
    if (this.held <= maxDocs) return;
    await this.staged.commit(this.writes(), {});
    for (const byId of this.docs.values()) byId.clear();
    this.held = 0;
    this.spilled = true;
  }

  /** Whether documents were spilled to the staged store (which then holds some of them). */
  get hasSpilled(): boolean {
    return this.spilled;
  }

  /**
   * Writes every document with `checkpoints`; the maps are emptied. Into `into` (a fresh store with
   * none of these collections, another thread's maybe) when nothing was spilled, else into the
   * staged store.
   */
  async finish(checkpoints: Record<string, number>, into: SqliteReadStore = this.staged): Promise<void> {
    if (this.spilled) {
      await this.staged.commit(this.writes(), checkpoints);
    } else {
      // Nothing stored yet: every live document inserted once, in key order (appends to the B-tree).
      for (const [collection, byId] of this.docs) {
        const ids = [...byId.keys()].sort();
        into.insertFresh(
          collection,
          (function* () {
            for (const id of ids) {
              const doc = byId.get(id);
              if (doc) yield [id, doc] as [string, Doc];
            }
          })(),
        );
      }
      await into.commit([], checkpoints);
    }
    for (const byId of this.docs.values()) byId.clear();
    this.held = 0;
  }
}
