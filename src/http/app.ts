/** The fastify application: conventions (params, errors, limits, auth, docs) and every route. */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import basicAuth from '@fastify/basic-auth';
import formbody from '@fastify/formbody';
import multipart from '@fastify/multipart';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Context } from '../context.js';
import { AppError, unauthorized } from '../domain/errors.js';
import { Authenticator, type Connection } from './auth/authenticator.js';
import type { AuthUser } from '../domain/auth-user.js';
import { clientErrorHandler, frameworkErrors, registerErrorHandling } from './errors.js';
import { routes } from './routes/index.js';
import { validationError } from './params.js';
import { BODY_LIMIT, UPLOAD_LIMIT, errorBodySchema, routesWithBodiesIn } from './route.js';
import type { ErrorObject } from 'ajv';
import { operatorGuard } from './auth/operator-token.js';
import { registerLimits } from './auth/rate-limits.js';
import type { AuthFailureLimiter } from './auth/limits.js';
import { lazyChildLogger, registerObservability, requestId } from './observability.js';
import { catchUpBatches } from './catch-up.js';
import { documentAsServed, type OpenApiDocument } from './openapi-document.js';

declare module 'fastify' {
  interface FastifyRequest {
    user: AuthUser | null;
  }
  interface FastifyInstance {
    operatorAuth: (req: FastifyRequest, reply: FastifyReply) => Promise<void>;
    /** Basic credentials of a user, read-your-writes included (a preValidation hook). */
    userAuth: (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => void;
    authenticator: Authenticator;
    /** Failed authentications per credential and address, and per address (./auth/limits.ts). */
    authFailures: AuthFailureLimiter;
    /**
     * Every route registered (method, url, whether the document hides it, its parameter names):
     * the OpenAPI test and the fuzzer walk it.
     */
    routeList: RouteTableEntry[];
  }
}

export interface RouteTableEntry {
  method: string;
  url: string;
  hidden: boolean;
  params: string[];
}


// A browser's Accept names text/html; curl (any type) and API clients get the JSON document.
export function wantsHtml(accept: string | undefined): boolean {
  return /(^|,)\s*text\/html\b/i.test(accept ?? '');
}

/** Node's server options for REQUEST_TIMEOUT_MS: headers keep Node's 60 s, never beyond the whole request's limit. */
export function serverTimeouts(requestTimeout: number) {
  return { requestTimeout, headersTimeout: Math.min(60_000, requestTimeout), connectionsCheckingInterval: Math.min(1000, requestTimeout) };
}

export async function buildApp(ctx: Context): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: ctx.logger as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT,
    // fastify's own request lines carry the URL (query strings hold OTP codes, passwords, keys):
    // src/http/observability.ts logs one line per request instead.
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: requestId,
    childLoggerFactory: lazyChildLogger,
    // Route schemas validate the merged, already normalized parameters (src/http/route.ts): no
    // second coercion by ajv, which would read "1e3" as an integer.
    ajv: { customOptions: { coerceTypes: false } },
    // The contract's message names the parameter; errors.ts turns it into the error body.
    schemaErrorFormatter: (errors) => new Error(validationError(errors as ErrorObject[]).message),
    return503OnClosing: true,
    // A client stalling in its headers or its body is cut off: the whole request must arrive within
    // REQUEST_TIMEOUT_MS (Node answers 408 and closes), checked every second, not every 30 s.
    requestTimeout: ctx.config.requestTimeoutMs,
    // A request without Host reaches errors.ts, which answers it with the contract's body.
    http: { ...serverTimeouts(ctx.config.requestTimeoutMs), requireHostHeader: false },
    // Errors raised before a route runs get the contract's body too (src/http/errors.ts).
    frameworkErrors,
    clientErrorHandler,
    // Which proxies' X-Forwarded-For gives `req.ip`, the client address of the limits (TRUST_PROXY).
    trustProxy: ctx.config.trustProxy,
  });
  // Answers are rendered by src/http/route.ts; response schemas document them, they do not filter them.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  // Graceful close: a keep-alive connection whose request is in flight when close begins would
  // otherwise stay open for keepAliveTimeout after its response. Such responses say
  // `Connection: close`, so the socket ends with them and close() completes.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // Callback style, as every hook on the request path here: an async hook costs a promise per request.
  app.addHook('onSend', (_req, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
  registerErrorHandling(app);
  registerObservability(app, ctx.metrics);
  const routeList: FastifyInstance['routeList'] = [];
  app.decorate('routeList', routeList);
  app.addHook('onRoute', (r) => {
    const schema = (r.schema ?? {}) as Record<string, { properties?: Record<string, unknown> } | undefined> & { hide?: boolean };
    const params = new Set<string>();
    for (const part of ['querystring', 'body', 'params'] as const) for (const k of Object.keys(schema[part]?.properties ?? {})) params.add(k);
    for (const method of [r.method].flat()) routeList.push({ method, url: r.url, hidden: Boolean(schema.hide), params: [...params] });
  });
  app.decorateRequest('user', null);

  app.addSchema(errorBodySchema);
  await app.register(swagger, {
    // Shared schemas keep their names in components.schemas (ErrorBody).
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    transformObject: (d) => ('openapiObject' in d ? documentAsServed(d.openapiObject as OpenApiDocument) : d.swaggerObject) as never,
    openapi: {
      info: { title: 'cloud-telephony HTTP API', version: '1.0' },
      components: {
        securitySchemes: {
          basic: { type: 'http', scheme: 'basic' },
          operator: { type: 'http', scheme: 'bearer' },
        },
      },
    },
  });
  const authFailures = await registerLimits(app, ctx);
  app.decorate('authFailures', authFailures);
  await app.register(formbody, { bodyLimit: BODY_LIMIT });
  // @fastify/multipart adds an async onRequest and onResponse hook to every request of its scope. A
  // GET has no body (fastify parses none), so only the routes that take one are put in its scope
  // (defineRoute); created here, after every hook of the root, which the scope copies.
  await app.register(async (withBodies) => {
    await withBodies.register(multipart, { limits: { fieldSize: BODY_LIMIT, fields: 100, files: 1, fileSize: UPLOAD_LIMIT, parts: 101 } });
    routesWithBodiesIn(app, withBodies);
  });
  // Outside that scope a multipart body is left unread as it was (an unknown URL is still a 404, not a 415).
  app.addContentTypeParser('multipart/form-data', (_req, _payload, done) => done(null));

  const authenticator = new Authenticator(ctx.reads);
  app.decorate('authenticator', authenticator);
  // Credentials must see users provisioned before this request arrived, and so must the route:
  // the requests of one turn of the event loop wait for the read models together.
  const caughtUp = catchUpBatches(ctx.sync, (err) => ctx.logger.error({ err }, 'request continuation failed'));
  const waited = new WeakSet<FastifyRequest>();
  const connectionOf = (req: FastifyRequest): Connection | undefined => {
    const header = req.headers.authorization;
    return typeof header === 'string' ? { connection: req.raw.socket, header } : undefined;
  };
  await app.register(basicAuth, {
    authenticate: { realm: 'telephony' },
    // Not async: a credential verified before is checked in memory and the request goes on
    // without a promise; only a first sight of a credential (scrypt) takes `authenticate`.
    validate(username, password, req, _reply, done) {
      const check = (err?: unknown) => {
        if (err) return done(err as Error);
        // Before the credential is looked at: an address over its failures learns nothing more.
        const refused = authFailures.refusal(`u:${username}`, req.ip);
        if (refused) return done(refused);
        const on = connectionOf(req);
        const known = authenticator.cached(username, password, on);
        if (known) {
          req.user = known;
          return done();
        }
        // Counted before it is verified, refunded when right: a burst of guesses is bounded too.
        const verified = authFailures.verify(`u:${username}`, req.ip, req.headers.authorization ?? '', () => authenticator.authenticate(username, password, on));
        verified.then((user) => {
          if (user instanceof AppError) return done(user);
          if (!user) return done(unauthorized());
          req.user = user;
          done();
        }, done);
      };
      if (waited.has(req)) check();
      else caughtUp(check);
    },
  });
  // The routes' credential check (src/http/route.ts): a connection's repeated Authorization header,
  // verified on it before, passes with a comparison; anything else goes through basicAuth above.
  app.decorate('userAuth', (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
    caughtUp((err) => {
      if (err) return done(err as Error);
      const on = connectionOf(req);
      const known = on && authenticator.forConnection(on.connection, on.header);
      if (known) {
        req.user = known;
        return done();
      }
      waited.add(req);
      app.basicAuth(req, reply, done);
    });
  });

  const checkOperatorToken = operatorGuard(ctx.config.operatorToken, authFailures);
  app.decorate('operatorAuth', async (req: FastifyRequest) => {
    checkOperatorToken(req);
    await ctx.sync.caughtUp();
  });

  // CONTRACT 13: /docs is the reference page for a browser and the document for anything else;
  // /docs/json is always the document. No credentials.
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { docExpansion: 'list', deepLinking: true },
    uiHooks: {
      onRequest: async (req: FastifyRequest, reply: FastifyReply) => {
        const url = req.routeOptions.url;
        if ((url === '/docs' || url === '/docs/') && !wantsHtml(req.headers.accept)) {
          return reply.type('application/json; charset=utf-8').send(JSON.stringify(app.swagger()));
        }
      },
    },
  });

  for (const register of routes) register(app, ctx);
  return app;
}
