/**
 * Equality indexes of a hot collection (see hot.ts): for one set of fields, the documents by the
 * values they hold in those fields. `find` then reads one bucket instead of scanning the collection,
 * which under writes it did on every request (each write voids the kept answers). An index is built
 * on the first `find` that filters on its fields and kept current by every write after.
 *
 * Matching is the hot store's: a wanted value equals the document's (===), and a wanted null also
 * matches a missing field. A document whose field holds anything else (an object, NaN) matches no
 * scalar and is left out of the index.
 */
import type { Doc, Scalar } from './port.js';

/** Indexes kept per collection: the code asks a handful of shapes of question. */
const MAX_INDEXES = 32;

/** One value as a key part: the type kept apart (true is not 1, '1' is not 1); null and missing alike. */
function part(v: unknown): string | undefined {
  if (v === null || v === undefined) return 'z';
  switch (typeof v) {
    case 'string':
      return `s${v}`;
    case 'number':
      return Number.isNaN(v) ? undefined : `n${v}`;
    case 'boolean':
      return v ? 'T' : 'F';
    default:
      return undefined;
  }
}

/** The bucket key of values, or undefined when one of them can equal no scalar. */
function keyOf(values: unknown[]): string | undefined {
  if (values.length === 1) return part(values[0]);
  const parts: string[] = [];
  for (const v of values) {
    const p = part(v);
    if (p === undefined) return undefined;
    parts.push(p);
  }
  // JSON: a string value holding the separator cannot fake another combination.
  return JSON.stringify(parts);
}

class FieldIndex {
  private readonly buckets = new Map<string, Map<string, Doc>>();

  constructor(private readonly fields: string[]) {}

  private key(doc: Doc): string | undefined {
    return keyOf(this.fields.map((f) => doc[f]));
  }

  add(id: string, doc: Doc) {
    const k = this.key(doc);
    if (k === undefined) return;
    let b = this.buckets.get(k);
    if (!b) this.buckets.set(k, (b = new Map()));
    b.set(id, doc);
  }

  remove(id: string, doc: Doc) {
    const k = this.key(doc);
    if (k === undefined) return;
    const b = this.buckets.get(k);
    if (b?.delete(id) && b.size === 0) this.buckets.delete(k);
  }

  lookup(where: Record<string, Scalar>): ReadonlyMap<string, Doc> | undefined {
    const k = keyOf(this.fields.map((f) => where[f]));
    return k === undefined ? undefined : this.buckets.get(k);
  }
}

/** The indexes of one loaded hot collection. */
export class CollectionIndexes {
  private readonly byFields = new Map<string, FieldIndex>();

  /** The documents matching `where` (by id, unordered), from the index on its fields (built on first use). */
  matching(docs: ReadonlyMap<string, Doc>, where: Record<string, Scalar>): Iterable<[string, Doc]> {
    const fields = Object.keys(where).sort();
    if (fields.length === 0) return docs;
    const name = fields.join('\u0000');
    let index = this.byFields.get(name);
    if (!index) {
      // Past the bound (a caller building questions from input): start over rather than grow.
      if (this.byFields.size >= MAX_INDEXES) this.byFields.clear();
      index = new FieldIndex(fields);
      for (const [id, doc] of docs) index.add(id, doc);
      this.byFields.set(name, index);
    }
    return index.lookup(where) ?? [];
  }

  /** Keeps every index current with a write: `before` is the document the write replaced, if any. */
  written(id: string, before: Doc | undefined, after: Doc | null) {
    for (const index of this.byFields.values()) {
      if (before !== undefined) index.remove(id, before);
      if (after !== null) index.add(id, after);
    }
  }
}

/** The key of a `find` question: its values typed as the indexes see them (null and missing alike). */
export function questionKey(where: Record<string, Scalar>, options: object): string {
  const fields = Object.keys(where).sort();
  return `${JSON.stringify(fields.map((f) => [f, part(where[f]) ?? null]))}\u0000${JSON.stringify(options)}`;
}
