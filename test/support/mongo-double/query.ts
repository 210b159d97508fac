/**
 * The MongoDB query and update language, as far as the read-store adapter (and ordinary driver use)
 * needs it, with the server's semantics: BSON type order for comparisons and sorts, numbers equal
 * across int/double, booleans never equal to numbers, `{f: null}` matching a missing field, dotted
 * paths that fan out over arrays, and upserts seeded from the filter's equalities.
 */
import { EJSON, ObjectId } from 'bson';

export type Doc = Record<string, unknown>;

/** A command error with the server's code, answered as `{ok: 0, code, codeName, errmsg}`. */
export class MongoCommandError extends Error {
  constructor(
    readonly code: number,
    readonly codeName: string,
    message: string,
  ) {
    super(message);
  }
}

const MISSING = Symbol('missing');
type Found = unknown | typeof MISSING;

const isBsonValue = (v: unknown): boolean => typeof v === 'object' && v !== null && '_bsontype' in v;
export const isPlainObject = (v: unknown): v is Doc =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date) && !(v instanceof RegExp) && !isBsonValue(v) && !(v instanceof Uint8Array);

/** Values at a dotted path; an array on the way is entered element by element (as the server does). */
function resolve(value: unknown, parts: string[]): Found[] {
  if (parts.length === 0) return [value];
  const [head, ...rest] = parts as [string, ...string[]];
  if (Array.isArray(value)) {
    const out: Found[] = [];
    if (/^\d+$/.test(head) && Number(head) < value.length) out.push(...resolve(value[Number(head)], rest));
    for (const el of value) if (isPlainObject(el)) out.push(...resolve(el, parts));
    return out.length ? out : [MISSING];
  }
  if (isPlainObject(value) && Object.prototype.hasOwnProperty.call(value, head)) return resolve(value[head], rest);
  return [MISSING];
}

/** Canonical BSON type order (the server's "comparison/sort order"). */
function typeRank(v: unknown): number {
  if (v === MISSING || v === null || v === undefined) return 2;
  if (typeof v === 'number' || typeof v === 'bigint') return 3;
  if (typeof v === 'string') return 4;
  if (typeof v === 'boolean') return 9;
  if (v instanceof Date) return 10;
  if (v instanceof RegExp) return 12;
  if (Array.isArray(v)) return 6;
  if (isBsonValue(v)) {
    const t = (v as { _bsontype: string })._bsontype;
    if (t === 'MinKey') return 1;
    if (t === 'MaxKey') return 13;
    if (t === 'Int32' || t === 'Double' || t === 'Long' || t === 'Decimal128') return 3;
    if (t === 'BSONSymbol') return 4;
    if (t === 'Binary') return 7;
    if (t === 'ObjectId') return 8;
    if (t === 'Timestamp') return 11;
    if (t === 'BSONRegExp') return 12;
    return 5;
  }
  if (v instanceof Uint8Array) return 7;
  return 5;
}

function numberOf(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  const b = v as { _bsontype: string; valueOf(): unknown; toNumber?(): number; toString(): string };
  if (b.toNumber) return b.toNumber();
  if (b._bsontype === 'Decimal128') return Number(b.toString());
  return Number(b.valueOf());
}

/** Total order over BSON values: type rank first, then within the type. */
export function compare(a: unknown, b: unknown): number {
  const ra = typeRank(a);
  const rb = typeRank(b);
  if (ra !== rb) return ra - rb;
  switch (ra) {
    case 1:
    case 2:
    case 13:
      return 0;
    case 3: {
      const x = numberOf(a);
      const y = numberOf(b);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case 4: {
      const x = String(a);
      const y = String(b);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case 9:
      return Number(a) - Number(b);
    case 10:
      return (a as Date).getTime() - (b as Date).getTime();
    case 6: {
      const x = a as unknown[];
      const y = b as unknown[];
      for (let i = 0; i < Math.min(x.length, y.length); i++) {
        const c = compare(x[i], y[i]);
        if (c !== 0) return c;
      }
      return x.length - y.length;
    }
    case 5: {
      const xe = Object.entries(a as Doc);
      const ye = Object.entries(b as Doc);
      for (let i = 0; i < Math.min(xe.length, ye.length); i++) {
        const c = compare(xe[i]![1], ye[i]![1]) || (xe[i]![0] < ye[i]![0] ? -1 : xe[i]![0] > ye[i]![0] ? 1 : 0);
        if (c !== 0) return c;
      }
      return xe.length - ye.length;
    }
    default: {
      const x = EJSON.stringify(a as never);
      const y = EJSON.stringify(b as never);
      return x < y ? -1 : x > y ? 1 : 0;
    }
  }
}

const equal = (a: unknown, b: unknown) => typeRank(a) === typeRank(b) && compare(a, b) === 0;

/** Does a value found at a path satisfy one operator? Arrays match when the whole or an element does. */
function matchesValue(found: Found, op: string, arg: unknown): boolean {
  const test = (v: unknown): boolean => {
    switch (op) {
      case '$eq':
        return arg === null ? v === MISSING || v === null || v === undefined : v !== MISSING && equal(v, arg);
      case '$gt':
        return v !== MISSING && typeRank(v) === typeRank(arg) && compare(v, arg) > 0;
      case '$gte':
        return typeRank(v) === typeRank(arg) && compare(v, arg) >= 0 && (v !== MISSING || arg === null);
      case '$lt':
        return v !== MISSING && typeRank(v) === typeRank(arg) && compare(v, arg) < 0;
      case '$lte':
        return typeRank(v) === typeRank(arg) && compare(v, arg) <= 0 && (v !== MISSING || arg === null);
      case '$in':
        return (arg as unknown[]).some((x) => matchesValue(v, '$eq', x));
      default:
        throw new MongoCommandError(2, 'BadValue', `unknown operator: ${op}`);
    }
  };
  if (test(found)) return true;
  return Array.isArray(found) && found.some((el) => test(el));
}

function matchesField(doc: Doc, path: string, cond: unknown): boolean {
  const found = resolve(doc, path.split('.'));
  const isOps = isPlainObject(cond) && Object.keys(cond).length > 0 && Object.keys(cond).every((k) => k.startsWith('$'));
  if (!isOps) return found.some((f) => matchesValue(f, '$eq', cond));
  for (const [op, arg] of Object.entries(cond as Doc)) {
    let ok: boolean;
    switch (op) {
      case '$ne':
        ok = !found.some((f) => matchesValue(f, '$eq', arg));
        break;
      case '$nin':
        ok = !found.some((f) => matchesValue(f, '$in', arg));
        break;
      case '$exists':
        ok = found.some((f) => f !== MISSING) === Boolean(arg);
        break;
      case '$not':
        ok = !matchesField(doc, path, arg);
        break;
      case '$in':
        if (!Array.isArray(arg)) throw new MongoCommandError(2, 'BadValue', '$in needs an array');
        ok = found.some((f) => matchesValue(f, op, arg));
        break;
      default:
        ok = found.some((f) => matchesValue(f, op, arg));
    }
    if (!ok) return false;
  }
  return true;
}

export function matches(doc: Doc, filter: Doc = {}): boolean {
  for (const [key, cond] of Object.entries(filter)) {
    if (key === '$and') {
      if (!(cond as Doc[]).every((f) => matches(doc, f))) return false;
    } else if (key === '$or') {
      if (!(cond as Doc[]).some((f) => matches(doc, f))) return false;
    } else if (key === '$nor') {
      if ((cond as Doc[]).some((f) => matches(doc, f))) return false;
    } else if (key.startsWith('$')) {
      throw new MongoCommandError(2, 'BadValue', `unknown top level operator: ${key}`);
    } else if (!matchesField(doc, key, cond)) return false;
  }
  return true;
}

/** Sort key of a document for one field: for an array, its least (ascending) or greatest element. */
function sortValue(doc: Doc, path: string, dir: number): unknown {
  const found = resolve(doc, path.split('.')).flatMap((f) => (Array.isArray(f) ? (f.length ? f : [MISSING]) : [f]));
  return found.reduce((best, v) => (dir * compare(v, best) < 0 ? v : best));
}

export function sortDocs(docs: Doc[], sort: Doc | undefined): Doc[] {
  if (!sort || Object.keys(sort).length === 0) return docs;
  const keys = Object.entries(sort).map(([k, d]) => [k, Number(d) < 0 ? -1 : 1] as const);
  return [...docs].sort((a, b) => {
    for (const [k, d] of keys) {
      const c = compare(sortValue(a, k, d), sortValue(b, k, d));
      if (c !== 0) return d * c;
    }
    return 0;
  });
}

function setPath(doc: Doc, path: string, value: unknown) {
  const parts = path.split('.');
  let cur: Doc = doc;
  for (const p of parts.slice(0, -1)) {
    if (!isPlainObject(cur[p])) cur[p] = {};
    cur = cur[p] as Doc;
  }
  cur[parts[parts.length - 1]!] = value;
}

function getPath(doc: Doc, path: string): Found {
  let cur: unknown = doc;
  for (const p of path.split('.')) {
    if (!isPlainObject(cur) || !Object.prototype.hasOwnProperty.call(cur, p)) return MISSING;
    cur = cur[p];
  }
  return cur;
}

function unsetPath(doc: Doc, path: string) {
  const parts = path.split('.');
  let cur: unknown = doc;
  for (const p of parts.slice(0, -1)) {
    if (!isPlainObject(cur)) return;
    cur = cur[p];
  }
  if (isPlainObject(cur)) delete cur[parts[parts.length - 1]!];
}

export const isReplacement = (update: Doc) => !Object.keys(update).some((k) => k.startsWith('$'));

/** Applies update operators to a copy of `doc`; `inserting` enables $setOnInsert. */
export function applyUpdate(doc: Doc, update: Doc, inserting: boolean): Doc {
  if (Array.isArray(update)) throw new MongoCommandError(9, 'FailedToParse', 'update pipelines are not supported by the test double');
  if (isReplacement(update)) {
    if (update._id !== undefined && doc._id !== undefined && !equal(update._id, doc._id)) {
      throw new MongoCommandError(66, 'ImmutableField', "Performing an update on the path '_id' would modify the immutable field '_id'");
    }
    return { _id: doc._id, ...structuredCloneBson(update) };
  }
  const out = structuredCloneBson(doc);
  for (const [op, fields] of Object.entries(update)) {
    if (!isPlainObject(fields)) throw new MongoCommandError(9, 'FailedToParse', `Modifiers operate on fields but we found type ${typeof fields} instead`);
    for (const [path, arg] of Object.entries(fields)) {
      if (path === '_id' && op !== '$setOnInsert' && !inserting) {
        throw new MongoCommandError(66, 'ImmutableField', "Performing an update on the path '_id' would modify the immutable field '_id'");
      }
      const current = getPath(out, path);
      switch (op) {
        case '$set':
          setPath(out, path, structuredCloneBson(arg));
          break;
        case '$setOnInsert':
          if (inserting) setPath(out, path, structuredCloneBson(arg));
          break;
        case '$unset':
          unsetPath(out, path);
          break;
        case '$inc':
          setPath(out, path, (current === MISSING ? 0 : numberOf(current)) + numberOf(arg));
          break;
        case '$max':
          if (current === MISSING || compare(arg, current) > 0) setPath(out, path, structuredCloneBson(arg));
          break;
        case '$min':
          if (current === MISSING || compare(arg, current) < 0) setPath(out, path, structuredCloneBson(arg));
          break;
        default:
          throw new MongoCommandError(9, 'FailedToParse', `Unknown modifier: ${op}. Expected a valid update modifier or pipeline-style update specified as an array`);
      }
    }
  }
  return out;
}

/** The document an upsert starts from: the filter's equality conditions (top level and under $and). */
export function upsertSeed(filter: Doc): Doc {
  const seed: Doc = {};
  const walk = (f: Doc) => {
    for (const [k, v] of Object.entries(f)) {
      if (k === '$and') (v as Doc[]).forEach(walk);
      else if (k.startsWith('$')) continue;
      else if (isPlainObject(v) && Object.keys(v).some((x) => x.startsWith('$'))) {
        if ('$eq' in v) setPath(seed, k, structuredCloneBson(v.$eq));
      } else setPath(seed, k, structuredCloneBson(v));
    }
  };
  walk(filter);
  return seed;
}

export const newId = () => new ObjectId();

/** Deep copy that keeps BSON values (ObjectId, Long, Binary...) and Dates as they are. */
export function structuredCloneBson<T>(v: T): T {
  if (Array.isArray(v)) return v.map((x) => structuredCloneBson(x)) as T;
  if (v instanceof Date) return new Date(v.getTime()) as T;
  if (isPlainObject(v)) {
    const out: Doc = {};
    for (const [k, x] of Object.entries(v)) out[k] = structuredCloneBson(x);
    return out as T;
  }
  return v;
}

/** A stable key for an index entry (type-aware: 1 and true differ; 1 and 1.0 do not). */
export function keyOf(values: unknown[]): string {
  return values
    .map((v) => {
      const r = typeRank(v);
      if (r === 2) return 'null';
      if (r === 3) return `n:${numberOf(v)}`;
      return `${r}:${EJSON.stringify(v as never, { relaxed: false })}`;
    })
    .join('\u0000');
}

export const valueAt = (doc: Doc, path: string): unknown => {
  const v = getPath(doc, path);
  return v === MISSING ? null : v;
};
