/**
 * Request ids, the one log line per request, and the request metrics (CONTRACT section 13).
 *
 * The log line holds the id, method, route pattern, status and time: never the URL (its query
 * string may carry OTP codes, passwords or keys), never a header, never a body.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'pino';
import { UNMATCHED_ROUTE, type PlatformMetrics } from '../ops/metrics.js';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** fastify's `genReqId`: the client's `X-Request-Id` when it has the contract's form, else a fresh id. */
export function requestId(raw: IncomingMessage): string {
  const given = raw.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/** The route pattern of a request (`/api/v1/calls/:xnid`), never its URL. */
export const routeOf = (req: FastifyRequest): string => req.routeOptions?.url ?? UNMATCHED_ROUTE;

/**
 * Logs and counts one finished request; streams that bypass fastify's reply call it themselves.
 * The line goes through the root logger with the request id as the field a request's child logger
 * adds (`reqId`, the same line), so a request that logs nothing else never makes a child logger.
 */
export function recordRequest(metrics: PlatformMetrics, req: FastifyRequest, statusCode: number, ms: number): void {
  const route = routeOf(req);
  metrics.observeRequest(req.method, route, statusCode, ms / 1000);
  req.server.log.info({ reqId: req.id, method: req.method, route, status: statusCode, ms: Math.round(ms * 100) / 100 }, 'request');
}

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type Log = (...args: unknown[]) => void;
type Parent = FastifyBaseLogger & { isLevelEnabled?: (level: string) => boolean };

/** A request's logger made on its first enabled use; one small object per request until then. */
class LazyChildLogger {
  private made: FastifyBaseLogger | null = null;

  constructor(
    private readonly parent: Parent,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  private real(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings, this.options));
  }

  private log(level: Level, args: unknown[]): void {
    // A level of its own (a route's logLevel) decides for itself; otherwise the parent's level does.
    if (this.options.level === undefined && this.parent.isLevelEnabled?.(level) === false) return;
    (this.real()[level] as Log)(...args);
  }

  fatal(...args: unknown[]) {
    this.log('fatal', args);
  }
  error(...args: unknown[]) {
    this.log('error', args);
  }
  warn(...args: unknown[]) {
    this.log('warn', args);
  }
  info(...args: unknown[]) {
    this.log('info', args);
  }
  debug(...args: unknown[]) {
    this.log('debug', args);
  }
  trace(...args: unknown[]) {
    this.log('trace', args);
  }
  silent() {}
  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real().child(bindings, options);
  }
  get level(): string {
    return this.real().level;
  }
  set level(level: string) {
    this.real().level = level;
  }
}

/**
 * fastify's `childLoggerFactory`: a request's logger (`req.log`, with its `reqId`) is made on its
 * first enabled use instead of for every request.
 */
export function lazyChildLogger(this: unknown, logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  return new LazyChildLogger(logger, bindings, options) as unknown as FastifyBaseLogger;
}

export function registerObservability(app: FastifyInstance, metrics: PlatformMetrics): void {
  app.addHook('onRequest', (req: FastifyRequest, reply: FastifyReply, done: () => void) => {
    reply.header('x-request-id', req.id);
    // Asked first: the line's fields (the route pattern builds an object) are not made for nothing.
    if ((app.log as Parent).isLevelEnabled?.('debug') !== false) req.log.debug({ method: req.method, route: routeOf(req) }, 'request received');
    done();
  });
  app.addHook('onResponse', (req: FastifyRequest, reply: FastifyReply, done: () => void) => {
    recordRequest(metrics, req, reply.statusCode, reply.elapsedTime);
    done();
  });
}
