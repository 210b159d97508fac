/**
 * Route parameters: one declaration per route gives the coercion rules of CONTRACT section 2
 * (digit-string integers, true/false/1/0 booleans, query merged with a form, multipart or JSON
 * body, the body winning) and the JSON Schema the OpenAPI document shows.
 */
import { invalid } from '../domain/errors.js';
import { PHONE_RE } from '../domain/phone.js';

export type ParamType = 'integer' | 'string' | 'boolean' | 'phone' | 'uuid' | 'epoch' | 'list';

export interface ParamSpec {
  type: ParamType;
  required?: boolean;
  description?: string;
  min?: number;
  max?: number;
  maxLength?: number;
  minLength?: number;
  enum?: readonly string[];
  /** For `list`: most items allowed. */
  maxItems?: number;
}

export type ParamSpecs = Record<string, ParamSpec>;

type ValueOf<S extends ParamSpec> = S['type'] extends 'integer' | 'epoch'
  ? number
  : S['type'] extends 'boolean'
    ? boolean
    : S['type'] extends 'list'
      ? string[]
      : string;

export type Params<P extends ParamSpecs> = {
  [K in keyof P]: P[K]['required'] extends true ? ValueOf<P[K]> : ValueOf<P[K]> | undefined;
};

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const INT_RE = /^[+-]?\d{1,16}$/;

function one(raw: unknown): unknown {
  // A repeated query parameter arrives as an array: the last one wins.
  return Array.isArray(raw) ? raw[raw.length - 1] : raw;
}

export function coerce<P extends ParamSpecs>(specs: P, input: Record<string, unknown>): Params<P> {
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(specs)) {
    let raw = one(input[name]);
    if (typeof raw === 'string' && spec.type !== 'string') raw = raw.trim();
    if (raw === undefined || raw === null || raw === '') {
      if (spec.required) throw invalid(`${name} is required`);
      continue;
    }
    out[name] = coerceOne(name, spec, raw);
  }
  return out as Params<P>;
}

function coerceOne(name: string, spec: ParamSpec, raw: unknown): unknown {
  switch (spec.type) {
    case 'integer':
    case 'epoch': {
      let n: number;
      if (typeof raw === 'number' && Number.isSafeInteger(raw)) n = raw;
      else if (typeof raw === 'string' && INT_RE.test(raw)) n = Number(raw);
      else throw invalid(`${name} must be an integer`);
      if (!Number.isSafeInteger(n)) throw invalid(`${name} is out of range`);
      if (spec.type === 'epoch' && n < 0) throw invalid(`${name} must be an epoch time in milliseconds`);
      if (spec.min !== undefined && n < spec.min) throw invalid(`${name} must be at least ${spec.min}`);
      if (spec.max !== undefined && n > spec.max) throw invalid(`${name} must be at most ${spec.max}`);
      return n;
    }
    case 'boolean': {
      if (typeof raw === 'boolean') return raw;
      if (raw === 1 || raw === 0) return raw === 1;
      if (typeof raw === 'string') {
        const s = raw.toLowerCase();
        if (s === 'true' || s === '1') return true;
        if (s === 'false' || s === '0') return false;
      }
      throw invalid(`${name} must be true or false`);
    }
    case 'phone': {
      const s = typeof raw === 'number' ? String(raw) : raw;
      if (typeof s !== 'string' || !PHONE_RE.test(s)) throw invalid(`${name} must be a phone number of 6 to 15 digits`);
      return s;
    }
    case 'uuid': {
      if (typeof raw !== 'string' || !UUID_RE.test(raw)) throw invalid(`${name} must be a UUID`);
      return raw.toLowerCase();
    }
    case 'list': {
      if (typeof raw !== 'string') throw invalid(`${name} must be a comma-separated list`);
      const items = raw.split(',').map((s) => s.trim()).filter(Boolean);
      if (spec.maxItems !== undefined && items.length > spec.maxItems) throw invalid(`${name} has more than ${spec.maxItems} items`);
      return items;
    }
    case 'string': {
      const s = typeof raw === 'number' || typeof raw === 'boolean' ? String(raw) : raw;
      if (typeof s !== 'string') throw invalid(`${name} must be a string`);
      if (spec.maxLength !== undefined && s.length > spec.maxLength) throw invalid(`${name} is longer than ${spec.maxLength} characters`);
      if (spec.minLength !== undefined && s.length < spec.minLength) throw invalid(`${name} must be at least ${spec.minLength} characters`);
      if (spec.enum && !spec.enum.includes(s)) throw invalid(`${name} must be one of ${spec.enum.join(', ')}`);
      return s;
    }
  }
}

/** JSON Schema of the parameters, for the OpenAPI document. */
export function toJsonSchema(specs: ParamSpecs) {
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  for (const [name, s] of Object.entries(specs)) {
    const base: Record<string, unknown> =
      s.type === 'integer' || s.type === 'epoch'
        ? { type: 'integer', minimum: s.min, maximum: s.max }
        : s.type === 'boolean'
          ? { type: 'boolean' }
          : s.type === 'phone'
            ? { type: 'string', pattern: PHONE_RE.source }
            : s.type === 'uuid'
              ? { type: 'string', format: 'uuid' }
              : { type: 'string', maxLength: s.maxLength, enum: s.enum };
    if (s.type === 'list') base.description = 'comma-separated list';
    if (s.type === 'epoch') base.description = 'epoch milliseconds';
    if (s.description) base.description = s.description;
    for (const k of Object.keys(base)) if (base[k] === undefined) delete base[k];
    properties[name] = base;
    if (s.required) required.push(name);
  }
  return { type: 'object', properties, ...(required.length ? { required } : {}) };
}
