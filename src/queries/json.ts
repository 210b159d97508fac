/**
 * Answers serialized once: the hot answers (agents, dashboard) are lists of documents that rarely
 * change between requests, and JSON.stringify of them was a quarter of those requests' CPU. A
 * document's JSON is kept per document object (read models hand out frozen documents and replace
 * them on change, so an object's JSON never goes stale) and answers are assembled from the pieces.
 */
import { randomBytes } from 'node:crypto';

/** An answer already serialized as JSON: the route sends it as it is. */
export class RawJson {
  private utf8: Buffer | undefined;
  constructor(readonly json: string) {}

  /** The answer's bytes, encoded once: an answer kept and sent again is not encoded per request. */
  get bytes(): Buffer {
    return (this.utf8 ??= Buffer.from(this.json, 'utf8'));
  }
}

/** The JSON of `doc` as `make` renders it, computed once per document object. */
export function jsonOf<D extends object>(cache: WeakMap<D, string>, doc: D, make: (doc: D) => unknown): string {
  let s = cache.get(doc);
  if (s === undefined) {
    s = JSON.stringify(make(doc));
    cache.set(doc, s);
  }
  return s;
}

/** A JSON array of pieces that are JSON already. */
export const jsonArray = (pieces: string[]) => `[${pieces.join(',')}]`;

const lists = new Map<string, { pieces: string[]; json: string }>();
/** Lists kept by `jsonArrayOnce` (one per service and kind of answer in practice). */
const MAX_LISTS = 200;

/**
 * jsonArray, reusing the last answer under `key` when the pieces are the same strings (pieces cached
 * per document compare by identity, so an unchanged list costs a comparison, not a join).
 */
export function jsonArrayOnce(key: string, pieces: string[]): string {
  const last = lists.get(key);
  if (last && last.pieces.length === pieces.length && last.pieces.every((p, i) => p === pieces[i])) return last.json;
  const json = jsonArray(pieces);
  if (lists.size >= MAX_LISTS) lists.clear();
  lists.set(key, { pieces, json });
  return json;
}

const MARK = `\u0000raw-${randomBytes(8).toString('hex')}-`;
/** A placeholder for raws[i] in `stringifyWith`. */
export const slot = (i: number) => `${MARK}${i}`;

const needles: string[] = [];

/** JSON.stringify(value), with each placeholder `slot(i)` replaced by raws[i] verbatim (keeps key order). */
export function stringifyWith(value: unknown, raws: string[]): string {
  let out = JSON.stringify(value);
  raws.forEach((raw, i) => {
    const needle = (needles[i] ??= JSON.stringify(slot(i)));
    const at = out.indexOf(needle);
    if (at >= 0) out = out.slice(0, at) + raw + out.slice(at + needle.length);
  });
  return out;
}
