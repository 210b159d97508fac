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
const LEVELS: Level[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'];

/**
 * fastify's `childLoggerFactory`: a request's logger (`req.log`, with its `reqId`) is made on its
 * first enabled use instead of for every request.
 */
export function lazyChildLogger(this: unknown, logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  let child: FastifyBaseLogger | null = null;
  const real = () => (child ??= logger.child(bindings, options));
  // A level of its own (a route's logLevel) decides for itself; otherwise the root's level does.
  const enabled = (level: Level) => options.level !== undefined || (logger as FastifyBaseLogger & { isLevelEnabled?: (l: string) => boolean }).isLevelEnabled?.(level) !== false;
  const lazy = {
    child: (b: Bindings, o?: ChildLoggerOptions) => real().child(b, o),
    silent: () => {},
    get level() {
      return real().level;
    },
    set level(level: string) {
      real().level = level;
    },
  } as Record<string, unknown>;
  for (const level of LEVELS) {
    lazy[level] = (...args: unknown[]) => {
      if (enabled(level)) (real()[level] as (...a: unknown[]) => void)(...args);
    };
  }
  return lazy as unknown as FastifyBaseLogger;
}

export function registerObservability(app: FastifyInstance, metrics: PlatformMetrics): void {
  app.addHook('onRequest', (req: FastifyRequest, reply: FastifyReply, done: () => void) => {
    reply.header('x-request-id', req.id);
    req.log.debug({ method: req.method, route: routeOf(req) }, 'request received');
    done();
  });
  app.addHook('onResponse', (req: FastifyRequest, reply: FastifyReply, done: () => void) => {
    recordRequest(metrics, req, reply.statusCode, reply.elapsedTime);
    done();
  });
}
