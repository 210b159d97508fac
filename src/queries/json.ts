/**
 * Answers serialized once: the hot answers (agents, dashboard) are lists of documents that rarely
 * change between requests, and JSON.stringify of them was a quarter of those requests' CPU. A
 * document's JSON is kept per document object (read models hand out frozen documents and replace
 * them on change, so an object's JSON never goes stale) and answers are assembled from the pieces.
 */
import { randomBytes } from 'node:crypto';

/** An answer already serialized as JSON: the route sends it as it is. */
export class RawJson {
  constructor(readonly json: string) {}
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

const MARK = `\u0000raw-${randomBytes(8).toString('hex')}-`;
/** A placeholder for raws[i] in `stringifyWith`. */
export const slot = (i: number) => `${MARK}${i}`;

/** JSON.stringify(value), with each placeholder `slot(i)` replaced by raws[i] verbatim (keeps key order). */
export function stringifyWith(value: unknown, raws: string[]): string {
  let out = JSON.stringify(value);
  raws.forEach((raw, i) => {
    out = out.replace(JSON.stringify(slot(i)), () => raw);
  });
  return out;
}
