/**
 * One way to declare an endpoint: parameters, who may call it, what it answers, and a handler.
 * The parameters' one schema is both what fastify validates (query and body merged into one
 * object first, as CONTRACT section 2 reads them) and what the OpenAPI document shows.
 * Every POST gets Idempotency-Key handling from here.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { lastValues, normalize, pick, toJsonSchema, type ParamSpecs, type Params } from './params.js';
import { invalid } from '../domain/errors.js';
import type { AuthUser } from '../domain/auth-user.js';
import type { Context } from '../context.js';
import { idempotent, keyId, type Rendered } from './idempotency.js';
import { RawJson } from '../queries/json.js';

/** A plain-text response (`pong`, `Success`, an id). */
export class Text {
  constructor(readonly text: string) {}
}
export const text = (s: string) => new Text(s);

/** Registers one resource's routes (src/http/routes/index.ts lists them all). */
export type RouteRegistrar = (app: FastifyInstance, ctx: Context) => void;

/** Request body limits: forms and JSON, and a multipart upload (contact lists). */
export const BODY_LIMIT = 1024 * 1024;
export const UPLOAD_LIMIT = 10 * 1024 * 1024;

/** A streamed response (exports): sent as it is produced, never held whole in memory. */
export class Streamed {
  constructor(
    readonly contentType: string,
    readonly body: NodeJS.ReadableStream,
    readonly headers: Record<string, string> = {},
  ) {}
}

export type { Rendered };

export interface HandlerArgs<P extends ParamSpecs> {
  req: FastifyRequest;
  reply: FastifyReply;
  p: Params<P>;
  /** The caller; for operator routes a synthetic operator identity is not given: use `user` only on `auth: 'user'`. */
  user: AuthUser;
  ctx: Context;
  /** What `file` returned for each uploaded file, by field name (multipart routes with `file`). */
  files: Record<string, unknown>;
  /** A POST with an Idempotency-Key: the key's id, from which `idFromKey` makes ids a retry finds again. */
  idempotency: string | null;
}

export interface UploadedFile {
  fieldname: string;
  filename: string;
  file: NodeJS.ReadableStream & AsyncIterable<Buffer>;
}

/** A JSON Schema (documentation of an answer or a document body). */
export type JsonSchema = Record<string, unknown>;

/** The success answer: a JSON body with its schema, or a text/plain answer (`pong`, `Success`, an id). */
export type Answer =
  | { json: JsonSchema; description?: string }
  | { text: string; example?: string }
  /** One answer in several media types (exports): media type → schema. */
  | { content: Record<string, JsonSchema>; description: string };

export interface RouteDef<P extends ParamSpecs> {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  url: string;
  summary: string;
  /** Longer prose for the reference page. */
  description?: string;
  /** Defaults to the method and path in camelCase (`postCalls`, `getAgentsFree`). */
  operationId?: string;
  tags?: string[];
  auth: 'user' | 'operator' | 'none';
  params?: P;
  /** Path parameters (`:name` in url), validated like the others. */
  pathParams?: ParamSpecs;
  /** The success answer (status 200). Without it the document says only "Success". */
  response?: Answer;
  /** Error statuses the document lists; defaults by method and auth (see `defaultErrors`). */
  errors?: number[];
  /** With `rawJsonBody`: the schema of the document (for the OpenAPI document only). */
  bodySchema?: JsonSchema;
  bodyLimit?: number;
  /**
   * Consumes each uploaded file as it streams in (multipart); what it returns reaches the handler in
   * `files`. Routes without it refuse file parts.
   */
  file?: (upload: UploadedFile) => Promise<unknown>;
  /** Fields of the multipart upload that are files, for the document (default `file` when `file` is set). */
  fileFields?: Record<string, { description?: string; required?: boolean }>;
  /** The body is a JSON document passed whole (as `req.body`), not parameters. */
  rawJsonBody?: boolean;
  handler(args: HandlerArgs<P>): Promise<unknown> | unknown;
}

const JSON_TYPE = 'application/json; charset=utf-8';

export function render(value: unknown, status = 200): Rendered {
  if (value instanceof Text) return { status, contentType: 'text/plain; charset=utf-8', payload: value.text };
  if (value instanceof RawJson) return { status, contentType: JSON_TYPE, payload: value.json };
  return { status, contentType: JSON_TYPE, payload: JSON.stringify(value) };
}

/** The contract's error body (CONTRACT section 2); app.ts adds it as the shared schema `ErrorBody`. */
export const errorBodySchema = {
  $id: 'ErrorBody',
  type: 'object',
  required: ['isError', 'code', 'message'],
  properties: {
    isError: { type: 'boolean', enum: [true] },
    code: { type: 'string', enum: ['INVALID_PARAMETER', 'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'CONFLICT', 'PAYLOAD_TOO_LARGE', 'RATE_LIMITED', 'UNAVAILABLE', 'INTERNAL'] },
    message: { type: 'string', description: 'what went wrong and why; names the parameter for INVALID_PARAMETER' },
  },
} as const;

const ERROR_WHEN: Record<number, string> = {
  400: 'INVALID_PARAMETER: a parameter is missing, malformed or out of range; the message names it',
  401: 'UNAUTHORIZED: no or wrong credentials',
  403: 'FORBIDDEN: the credentials may not do this (a service not assigned to them, another agent)',
  404: 'NOT_FOUND: an unknown call, agent, subscriber or number',
  409: 'CONFLICT: the state forbids it',
  413: 'PAYLOAD_TOO_LARGE: a body or upload over its limit',
  429: 'RATE_LIMITED: over a rate or OTP limit; Retry-After says when to try again',
  414: 'INVALID_PARAMETER: the URL (path and query) is too long',
  415: 'INVALID_PARAMETER: the body is in a media type the operation does not read',
  503: 'UNAVAILABLE: a backing store is unreachable; nothing was half-done',
};

export function defaultErrors(method: string, auth: RouteDef<ParamSpecs>['auth']): number[] {
  const out = [400];
  if (auth !== 'none') out.push(401);
  if (auth === 'user') out.push(403);
  out.push(404);
  if (method !== 'GET') out.push(409);
  if (method !== 'GET' && method !== 'DELETE') out.push(413);
  out.push(429, 503);
  return out;
}

/** `POST /api/v1/calls/:callTxnId` → `postCallsByCallTxnId`; operator routes keep `Ops`. */
export function defaultOperationId(method: string, url: string): string {
  const words = url
    .replace(/^\/api\/v1\//, '/')
    .replace(/^\/ops\/v1\//, '/ops/')
    .split('/')
    .filter(Boolean)
    .flatMap((seg) => (seg.startsWith(':') ? ['by', seg.slice(1)] : seg.split(/[^A-Za-z0-9]+/)))
    .filter(Boolean);
  return method.toLowerCase() + words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');
}

function responses(def: RouteDef<ParamSpecs>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const r = def.response;
  if (r && 'content' in r) {
    out[200] = { description: r.description, content: Object.fromEntries(Object.entries(r.content).map(([type, schema]) => [type, { schema }])) };
  } else if (r && 'text' in r) {
    const schema: JsonSchema = { type: 'string' };
    if (r.example !== undefined) schema.example = r.example;
    out[200] = { description: r.text, content: { 'text/plain': { schema } } };
  } else if (r) {
    out[200] = { description: r.description ?? 'Success', ...r.json };
  } else {
    out[200] = { description: 'Success', type: 'object', additionalProperties: true };
  }
  // Any request may be refused before its route runs: a URL over the limit (414) or, with a body,
  // a media type no parser reads (415).
  const early = def.method === 'GET' || def.method === 'DELETE' ? [414] : [414, 415];
  for (const status of [...(def.errors ?? defaultErrors(def.method, def.auth)), ...early]) {
    out[status] = { description: ERROR_WHEN[status] ?? 'error', $ref: 'ErrorBody#' };
  }
  return out;
}

/** The OpenAPI-facing schema of a route, which fastify also validates with (see `defineRoute`). */
export function routeSchema(def: RouteDef<ParamSpecs>): Record<string, unknown> {
  const params = def.params ?? {};
  const inBody = def.method !== 'GET' && def.method !== 'DELETE';
  const queryOnly: ParamSpecs = {};
  const bodyParams: ParamSpecs = {};
  for (const [name, spec] of Object.entries(params)) (inBody && spec.in !== 'query' ? bodyParams : queryOnly)[name] = spec;
  const schema: Record<string, unknown> = {
    summary: def.summary,
    ...(def.description ? { description: def.description } : {}),
    operationId: def.operationId ?? defaultOperationId(def.method, def.url),
    tags: def.tags,
    ...(def.pathParams ? { params: toJsonSchema(def.pathParams) } : {}),
    ...(Object.keys(queryOnly).length ? { querystring: toJsonSchema(queryOnly) } : {}),
    response: responses(def),
    ...(def.auth === 'user' ? { security: [{ basic: [] }] } : def.auth === 'operator' ? { security: [{ operator: [] }] } : {}),
  };
  if (def.rawJsonBody) {
    schema.body = def.bodySchema ?? { type: 'object' };
  } else if (inBody) {
    const body = toJsonSchema(bodyParams);
    const fileFields = def.fileFields ?? (def.file ? { file: { required: true } } : {});
    for (const [name, f] of Object.entries(fileFields)) {
      // Consumed as they stream in; the validated object holds the file's name in their place.
      body.properties[name] = { type: 'string', format: 'binary', ...(f.description ? { description: f.description } : {}) };
      if (f.required) body.required = [...(body.required ?? []), name];
    }
    schema.body = body;
    schema.consumes = def.file ? ['multipart/form-data'] : ['application/x-www-form-urlencoded', 'application/json', 'multipart/form-data'];
  }
  return schema;
}

/** A form body (its repeated names are arrays, as in a query string), not JSON. */
function isForm(req: FastifyRequest): boolean {
  const type = req.headers['content-type'];
  return typeof type === 'string' && /^\s*application\/x-www-form-urlencoded\s*(;|$)/i.test(type);
}

async function gatherInput(req: FastifyRequest, def: RouteDef<ParamSpecs>, files: Record<string, unknown>): Promise<Record<string, unknown>> {
  // A name repeated in the query string or a form takes its last value; a JSON body's arrays stay
  // arrays (CONTRACT 2), for `normalize` to refuse where one value is declared.
  const query = lastValues((req.query ?? {}) as Record<string, unknown>);
  if (def.rawJsonBody) return { ...query };
  let bodyParams: Record<string, unknown> = {};
  if (req.isMultipart()) {
    for await (const part of req.parts()) {
      if (part.type === 'file') {
        if (!def.file) {
          part.file.resume();
          throw invalid(`unexpected file field ${part.fieldname}`);
        }
        try {
          files[part.fieldname] = await def.file({ fieldname: part.fieldname, filename: part.filename, file: part.file });
        } finally {
          // Whatever the consumer left unread is drained, so the request can finish.
          part.file.resume();
        }
        // The file field is validated as present by the route schema (its name stands for it).
        bodyParams[part.fieldname] = part.filename || part.fieldname;
        continue;
      }
      bodyParams[part.fieldname] = part.value;
    }
  } else if (req.body !== undefined && req.body !== null) {
    if (typeof req.body !== 'object' || Array.isArray(req.body)) throw invalid('the body must be a JSON object, a form or multipart form data');
    bodyParams = isForm(req) ? lastValues(req.body as Record<string, unknown>) : (req.body as Record<string, unknown>);
  }
  return { ...query, ...bodyParams };
}

const bodyScopes = new WeakMap<FastifyInstance, FastifyInstance>();
/** Where `defineRoute` puts the routes of `app` that take a body (app.ts: the multipart scope). */
export function routesWithBodiesIn(app: FastifyInstance, scope: FastifyInstance): void {
  bodyScopes.set(app, scope);
}

const FILES = Symbol('uploaded files');
type WithFiles = FastifyRequest & { [FILES]?: Record<string, unknown> };

export function defineRoute<P extends ParamSpecs>(app: FastifyInstance, ctx: Context, def: RouteDef<P>) {
  const d = def as unknown as RouteDef<ParamSpecs>;
  const schema = routeSchema(d);
  const params = def.params ?? ({} as P);
  /**
   * Runs after the credentials are checked and before fastify validates: query and body become one
   * object (the body's value winning), read as CONTRACT section 2 says; fastify then validates that
   * object against the route's querystring and body schemas, the ones the document shows.
   */
  const merge = async (req: FastifyRequest) => {
    const files: Record<string, unknown> = {};
    const merged = normalize(params, await gatherInput(req, d, files));
    (req as WithFiles)[FILES] = files;
    req.query = merged;
    if (!def.rawJsonBody && schema.body) req.body = merged;
    if (def.pathParams) req.params = normalize(def.pathParams, (req.params ?? {}) as Record<string, unknown>);
  };
  /** A GET has no body (fastify parses none): the merge is the query's, and needs no promise. */
  const mergeQuery = (req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    try {
      req.query = normalize(params, lastValues((req.query ?? {}) as Record<string, unknown>));
      if (def.pathParams) req.params = normalize(def.pathParams, (req.params ?? {}) as Record<string, unknown>);
    } catch (err) {
      return done(err as Error);
    }
    done();
  };
  // preValidation: after the rate limit (onRequest), so a request counts before its password is checked.
  const authHooks = def.auth === 'user' ? [app.userAuth] : def.auth === 'operator' ? [app.operatorAuth] : [];
  const args = (req: FastifyRequest, reply: FastifyReply, idempotency: string | null = null): HandlerArgs<P> => ({
    req,
    reply,
    p: pick(params, req.query as Record<string, unknown>) as Params<P>,
    user: req.user!,
    ctx,
    files: (req as WithFiles)[FILES] ?? {},
    idempotency,
  });
  (def.method === 'GET' ? app : (bodyScopes.get(app) ?? app)).route({
    method: def.method,
    url: def.url,
    schema,
    bodyLimit: def.bodyLimit,
    preValidation: [...authHooks, def.method === 'GET' ? mergeQuery : merge] as never,
    // Not async: an answer the handler has at hand (a cached one) is sent in the same turn, without
    // a promise; a handler's promise is handed to fastify, which sends its value or its error.
    handler: (req, reply) => {
      const key = req.headers['idempotency-key'];
      if (def.method === 'POST' && typeof key === 'string' && key.length > 0) return idempotentAnswer(req, reply, key);
      const result = def.handler(args(req, reply));
      // The reply is a thenable settling when the response has ended: a promise resolved with it
      // tells fastify the answer is on its way (a stream still flowing), not that there is none.
      if (isThenable(result)) return result.then((value) => answer(reply, value));
      answer(reply, result);
      return undefined;
    },
  });

  async function idempotentAnswer(req: FastifyRequest, reply: FastifyReply, key: string) {
    let streamed: Streamed | null = null;
    const scope = `${def.auth === 'operator' ? 'operator' : `u${req.user?.id}`}|${def.method} ${def.url}`;
    const id = keyId(scope, key);
    const run = async (): Promise<Rendered> => {
      const result = await def.handler(args(req, reply, id));
      if (result instanceof Streamed) {
        streamed = result;
        return { status: 200, contentType: result.contentType, payload: '' };
      }
      return render(result, reply.statusCode);
    };
    const rendered = await idempotent(ctx, scope, key, run);
    const stream = streamed as Streamed | null;
    if (stream) return reply.code(200).headers(stream.headers).type(stream.contentType).send(stream.body);
    return reply.code(rendered.status).type(rendered.contentType).send(rendered.payload);
  }
}

const isThenable = (v: unknown): v is PromiseLike<unknown> => v !== null && typeof v === 'object' && typeof (v as { then?: unknown }).then === 'function';

/** Sends a handler's value: a stream as it comes, an answer serialized once as its cached bytes. */
function answer(reply: FastifyReply, value: unknown): FastifyReply {
  if (value instanceof Streamed) return reply.code(200).headers(value.headers).type(value.contentType).send(value.body);
  if (value instanceof RawJson) return reply.code(reply.statusCode).type(JSON_TYPE).send(value.bytes);
  const rendered = render(value, reply.statusCode);
  return reply.code(rendered.status).type(rendered.contentType).send(rendered.payload);
}
