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
import type { Doc, FindOptions, Scalar } from './port.js';

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

/** The bucket key of the values of `fields` in `source`, or undefined when one of them can equal no scalar. */
function keyOf(source: Record<string, unknown>, fields: string[]): string | undefined {
  if (fields.length === 1) return part(source[fields[0]!]);
  let key = '';
  for (const f of fields) {
    const p = part(source[f]);
    if (p === undefined) return undefined;
    // Length-prefixed: a string value holding a separator cannot fake another combination.
    key += `${p.length}:${p}`;
  }
  return key;
}

const NONE: ReadonlyMap<string, Doc> = new Map();

function sameFields(fields: string[], a: Doc, b: Doc): boolean {
  for (const f of fields) if (a[f] !== b[f]) return false;
  return true;
}

class FieldIndex {
  private readonly buckets = new Map<string, Map<string, Doc>>();
  /** Each indexed document's bucket key: a write that leaves the fields as they were builds no key. */
  private readonly keys = new Map<string, string>();

  constructor(private readonly fields: string[]) {}

  private key(doc: Doc | null | undefined): string | undefined {
    return doc ? keyOf(doc, this.fields) : undefined;
  }

  /** `before` replaced by `after` (either may be absent). */
  written(id: string, before: Doc | undefined, after: Doc | null) {
    const was = this.keys.get(id);
    const is = was !== undefined && before && after && sameFields(this.fields, before, after) ? was : this.key(after);
    if (was !== undefined && was !== is) {
      const b = this.buckets.get(was);
      if (b?.delete(id) && b.size === 0) this.buckets.delete(was);
    }
    if (is === undefined) {
      this.keys.delete(id);
      return;
    }
    if (is !== was) this.keys.set(id, is);
    let b = this.buckets.get(is);
    if (!b) this.buckets.set(is, (b = new Map()));
    b.set(id, after!);
  }

  lookup(where: Record<string, Scalar>): ReadonlyMap<string, Doc> | undefined {
    const k = keyOf(where, this.fields);
    return k === undefined ? undefined : this.buckets.get(k);
  }
}

/** The indexes of one loaded hot collection. */
export class CollectionIndexes {
  private readonly byFields = new Map<string, FieldIndex>();

  /**
   * The documents matching `where` (by id, unordered), from the index on its fields (built on first
   * use). `fields`: the keys of `where`, sorted.
   */
  matching(docs: ReadonlyMap<string, Doc>, where: Record<string, Scalar>, fields: string[]): ReadonlyMap<string, Doc> {
    if (fields.length === 0) return docs;
    const name = fields.join('\u0000');
    let index = this.byFields.get(name);
    if (!index) {
      // Past the bound (a caller building questions from input): start over rather than grow.
      if (this.byFields.size >= MAX_INDEXES) this.byFields.clear();
      index = new FieldIndex(fields);
      for (const [id, doc] of docs) index.written(id, undefined, doc);
      this.byFields.set(name, index);
    }
    return index.lookup(where) ?? NONE;
  }

  /** Keeps every index current with a write: `before` is the document the write replaced, if any. */
  written(id: string, before: Doc | undefined, after: Doc | null) {
    for (const index of this.byFields.values()) index.written(id, before, after);
  }
}

/** The key of a `find` question (`fields`: the keys of `where`, sorted): its values typed as the indexes see them. */
export function questionKey(where: Record<string, Scalar>, fields: string[], options: FindOptions): string {
  let key = options.orderBy || options.limit !== undefined ? JSON.stringify(options) : '';
  for (const f of fields) {
    const p = part(where[f]) ?? '!'; // '!': a value no document matches
    key += `|${f.length}:${f}${p.length}:${p}`;
  }
  return key;
}
