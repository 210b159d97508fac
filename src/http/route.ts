/**
 * One way to declare an endpoint: parameters (coerced and validated as CONTRACT section 2
 * says, and documented in OpenAPI), who may call it, and a handler returning the response.
 * Every POST gets Idempotency-Key handling from here.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { coerce, toJsonSchema, type ParamSpecs, type Params } from './params.js';
import { invalid } from '../domain/errors.js';
import type { AuthUser } from './auth/authenticator.js';
import type { Context } from '../context.js';
import { idempotent } from './idempotency.js';

/** A plain-text response (`pong`, `Success`, an id). */
export class Text {
  constructor(readonly text: string) {}
}
export const text = (s: string) => new Text(s);

export interface Rendered {
  status: number;
  contentType: string;
  payload: string;
}

export interface HandlerArgs<P extends ParamSpecs> {
  req: FastifyRequest;
  reply: FastifyReply;
  p: Params<P>;
  /** The caller; for operator routes a synthetic operator identity is not given: use `user` only on `auth: 'user'`. */
  user: AuthUser;
  ctx: Context;
  /** What `file` returned for each uploaded file, by field name (multipart routes with `file`). */
  files: Record<string, unknown>;
}

export interface UploadedFile {
  fieldname: string;
  filename: string;
  file: NodeJS.ReadableStream & AsyncIterable<Buffer>;
}

export interface RouteDef<P extends ParamSpecs> {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  url: string;
  summary: string;
  tags?: string[];
  auth: 'user' | 'operator' | 'none';
  params?: P;
  /** Path parameters (`:name` in url), validated like the others. */
  pathParams?: ParamSpecs;
  bodyLimit?: number;
  /**
   * Consumes each uploaded file as it streams in (multipart); what it returns reaches the handler in
   * `files`. Routes without it refuse file parts.
   */
  file?: (upload: UploadedFile) => Promise<unknown>;
  /** The body is a JSON document passed whole (as `req.body`), not parameters. */
  rawJsonBody?: boolean;
  handler(args: HandlerArgs<P>): Promise<unknown> | unknown;
}

export function render(value: unknown, status = 200): Rendered {
  if (value instanceof Text) return { status, contentType: 'text/plain; charset=utf-8', payload: value.text };
  return { status, contentType: 'application/json; charset=utf-8', payload: JSON.stringify(value) };
}

async function gatherInput(req: FastifyRequest, def: RouteDef<ParamSpecs>, files: Record<string, unknown>): Promise<Record<string, unknown>> {
  const query = (req.query ?? {}) as Record<string, unknown>;
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
        continue;
      }
      bodyParams[part.fieldname] = part.value;
    }
  } else if (req.body !== undefined && req.body !== null) {
    if (typeof req.body !== 'object' || Array.isArray(req.body)) throw invalid('the body must be a JSON object, a form or multipart form data');
    bodyParams = req.body as Record<string, unknown>;
  }
  return { ...query, ...bodyParams };
}

export function defineRoute<P extends ParamSpecs>(app: FastifyInstance, ctx: Context, def: RouteDef<P>) {
  const paramSchema = toJsonSchema(def.params ?? {});
  const inBody = def.method === 'POST' || def.method === 'PUT';
  const schema: Record<string, unknown> = {
    summary: def.summary,
    tags: def.tags,
    ...(def.pathParams ? { params: toJsonSchema(def.pathParams) } : {}),
    ...(def.rawJsonBody ? { body: { type: 'object' } } : inBody ? { body: paramSchema } : { querystring: paramSchema }),
    ...(def.auth === 'user' ? { security: [{ basic: [] }] } : def.auth === 'operator' ? { security: [{ operator: [] }] } : {}),
  };
  if (inBody && !def.rawJsonBody) schema.consumes = ['application/x-www-form-urlencoded', 'application/json', 'multipart/form-data'];
  // preValidation: after the rate limit (onRequest), so a request counts before its password is checked.
  const authHooks =
    def.auth === 'user' ? [app.basicAuth] : def.auth === 'operator' ? [app.operatorAuth] : [];
  app.route({
    method: def.method,
    url: def.url,
    schema,
    bodyLimit: def.bodyLimit,
    preValidation: authHooks as never,
    handler: async (req, reply) => {
      const run = async (): Promise<Rendered> => {
        if (def.pathParams) coerce(def.pathParams, (req.params ?? {}) as Record<string, unknown>);
        const files: Record<string, unknown> = {};
        const p = coerce(def.params ?? ({} as P), await gatherInput(req, def as RouteDef<ParamSpecs>, files));
        const result = await def.handler({ req, reply, p, user: req.user!, ctx, files });
        return render(result, reply.statusCode);
      };
      const key = req.headers['idempotency-key'];
      const rendered =
        def.method === 'POST' && typeof key === 'string' && key.length > 0
          ? await idempotent(ctx, `${def.auth === 'operator' ? 'operator' : `u${req.user?.id}`}|${def.method} ${def.url}`, key, run)
          : await run();
      return reply.code(rendered.status).type(rendered.contentType).send(rendered.payload);
    },
  });
}
