/**
 * Route parameters: one declaration per route gives the JSON Schema that fastify validates
 * (src/http/route.ts) and the OpenAPI document shows, so the two cannot drift. Before validation,
 * `normalize` applies the lexical rules of CONTRACT section 2 that JSON Schema cannot express
 * (digit-string integers, true/false/1/0 booleans, an empty value meaning absent); anything it
 * cannot read is left as it came, for the schema to refuse. A name repeated in a query string or a
 * form takes its last value (`lastValues`, applied to those sources only): a JSON array or object
 * where a single value is declared is refused naming the parameter, never read as one of its items.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { invalid, type AppError } from '../domain/errors.js';
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
  /**
   * Where the document shows it on a POST/PUT/PATCH: `query` for a parameter clients put in the
   * query string (validate-OTP's `otp`). Every parameter is read from anywhere regardless (CONTRACT 2).
   */
  in?: 'query';
  example?: unknown;
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

const UUID_PATTERN = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';
const INT_RE = /^[+-]?\d{1,16}$/;

/**
 * A query string's or a form's names, a repeated one (an array) taking its last value. The input
 * itself when nothing is repeated, the common case, so a request's path allocates nothing.
 */
export function lastValues(input: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | null = null;
  for (const name in input) {
    const raw = input[name];
    if (!Array.isArray(raw)) continue;
    out ??= { ...input };
    out[name] = raw[raw.length - 1];
  }
  return out ?? input;
}

const SHAPE: Record<ParamType, string> = {
  integer: 'an integer',
  epoch: 'an integer',
  boolean: 'true or false',
  string: 'a string',
  phone: 'a string',
  uuid: 'a string',
  list: 'a list of strings',
};

/**
 * The input with each declared parameter read as its type where it can be; other names pass through.
 * A JSON array or object given for a single value (or an object for a list) is 400 naming it.
 */
export function normalize(specs: ParamSpecs, input: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...input };
  for (const [name, spec] of Object.entries(specs)) {
    if (!Object.hasOwn(input, name)) continue;
    let raw = input[name];
    if (raw !== null && typeof raw === 'object' && !(spec.type === 'list' && Array.isArray(raw))) throw invalid(`${name} must be ${SHAPE[spec.type]}`);
    if (typeof raw === 'string' && spec.type !== 'string') raw = raw.trim();
    if (raw === undefined || raw === null || raw === '') delete out[name];
    else out[name] = normalizeOne(spec, raw);
  }
  return out;
}

function normalizeOne(spec: ParamSpec, raw: unknown): unknown {
  switch (spec.type) {
    case 'integer':
    case 'epoch':
      if (typeof raw === 'string' && INT_RE.test(raw) && Number.isSafeInteger(Number(raw))) return Number(raw);
      return raw;
    case 'boolean': {
      if (raw === 1 || raw === 0) return raw === 1;
      const s = typeof raw === 'string' ? raw.toLowerCase() : raw;
      if (s === 'true' || s === '1') return true;
      if (s === 'false' || s === '0') return false;
      return raw;
    }
    case 'phone':
      return typeof raw === 'number' && Number.isSafeInteger(raw) ? String(raw) : raw;
    case 'uuid':
      return typeof raw === 'string' ? raw.toLowerCase() : raw;
    case 'list':
      return typeof raw === 'string' ? raw.split(',').map((s) => s.trim()).filter(Boolean) : raw;
    case 'string':
      return typeof raw === 'number' || typeof raw === 'boolean' ? String(raw) : raw;
  }
}

/** JSON Schema of one parameter's normalized value: what fastify validates and the document shows. */
export function paramSchema(s: ParamSpec): Record<string, unknown> {
  const base: Record<string, unknown> =
    s.type === 'integer'
      ? { type: 'integer', minimum: s.min, maximum: s.max }
      : s.type === 'epoch'
        ? { type: 'integer', minimum: s.min ?? 0, maximum: s.max, description: 'epoch milliseconds' }
        : s.type === 'boolean'
          ? { type: 'boolean', description: 'true, false, 1 or 0' }
          : s.type === 'phone'
            ? { type: 'string', pattern: PHONE_RE.source, description: 'phone number: 6 to 15 digits, an optional leading +' }
            : s.type === 'uuid'
              ? { type: 'string', format: 'uuid', pattern: UUID_PATTERN }
              : s.type === 'list'
                ? { type: 'array', items: { type: 'string' }, maxItems: s.maxItems, description: 'comma-separated list' }
                : { type: 'string', minLength: s.minLength, maxLength: s.maxLength, enum: s.enum };
  if (s.description) base.description = s.description;
  if (s.example !== undefined) base.examples = [s.example];
  for (const k of Object.keys(base)) if (base[k] === undefined) delete base[k];
  return base;
}

/** JSON Schema of a set of parameters. */
export function toJsonSchema(specs: ParamSpecs): { type: 'object'; properties: Record<string, unknown>; required?: string[] } {
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  for (const [name, s] of Object.entries(specs)) {
    properties[name] = paramSchema(s);
    if (s.required) required.push(name);
  }
  return { type: 'object', properties, ...(required.length ? { required } : {}) };
}

function paramName(e: ErrorObject): string {
  const first = e.instancePath.split('/')[1] ?? '';
  return first.replace(/~1/g, '/').replace(/~0/g, '~');
}

const TYPE_WORDS: Record<string, string> = {
  integer: 'an integer',
  number: 'a number',
  boolean: 'true or false',
  string: 'a string',
  array: 'a comma-separated list',
  object: 'an object',
};

/** The contract's message for a failed validation: it names the parameter (CONTRACT section 2). */
export function validationMessage(e: ErrorObject): string {
  const name = paramName(e);
  const p = e.params as Record<string, unknown>;
  if (e.keyword === 'required') return `${String(p.missingProperty)} is required`;
  if (!name) return 'the parameters must be an object of names and values';
  switch (e.keyword) {
    case 'type':
      return `${name} must be ${TYPE_WORDS[String(p.type)] ?? String(p.type)}`;
    case 'minimum':
      return `${name} must be at least ${String(p.limit)}`;
    case 'maximum':
      return `${name} must be at most ${String(p.limit)}`;
    case 'maxLength':
      return `${name} is longer than ${String(p.limit)} characters`;
    case 'minLength':
      return `${name} must be at least ${String(p.limit)} characters`;
    case 'maxItems':
      return `${name} has more than ${String(p.limit)} items`;
    case 'enum':
      return `${name} must be one of ${(p.allowedValues as unknown[]).join(', ')}`;
    case 'pattern':
      if (p.pattern === PHONE_RE.source) return `${name} must be a phone number of 6 to 15 digits`;
      if (p.pattern === UUID_PATTERN) return `${name} must be a UUID`;
      return `${name} is malformed`;
    default:
      return `${name} ${e.message ?? 'is not valid'}`;
  }
}

export function validationError(errors: ErrorObject[]): AppError {
  return invalid(errors[0] ? validationMessage(errors[0]) : 'invalid parameters');
}

// Outside a route (CLI, unit tests): the same schema on an ajv set up as fastify's (src/http/app.ts).
const ajv = new Ajv({ coerceTypes: false, useDefaults: true, removeAdditional: true, allErrors: false, formats: { uuid: true, binary: true } });
const compiled = new WeakMap<ParamSpecs, ValidateFunction>();

/** The declared parameters of `input`, normalized and validated; 400 naming the first bad one. */
export function coerce<P extends ParamSpecs>(specs: P, input: Record<string, unknown>): Params<P> {
  let validate = compiled.get(specs);
  if (!validate) compiled.set(specs, (validate = ajv.compile(toJsonSchema(specs))));
  const value = normalize(specs, lastValues(input));
  if (!validate(value)) throw validationError(validate.errors ?? []);
  return pick(specs, value) as Params<P>;
}

/** Only the declared names (unknown parameters are ignored). */
export function pick(specs: ParamSpecs, value: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(specs)) if (value[name] !== undefined) out[name] = value[name];
  return out;
}
