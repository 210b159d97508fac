/**
 * The one mapping from failures to the contract's error body `{"isError", "code", "message"}`:
 * route errors, fastify's framework errors (bad URLs), the HTTP parser's client errors (oversized
 * headers, garbage) and the body parsers' errors all come through here. Never a stack trace,
 * never a 5xx for bad input.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, type ErrorCode } from '../domain/errors.js';
import { isUnreachable } from '../gateways/postgres.js';

export interface ErrorBody {
  isError: true;
  code: ErrorCode;
  message: string;
}

/** Longest request target (path and query) served; longer is 414. */
export const MAX_URL_LENGTH = 8192;

/**
 * What the multipart parser (busboy) throws as plain Errors when a body is not the multipart its
 * content type claims: no boundary, a truncated body, a part cut short.
 */
const MALFORMED_MULTIPART = /^(Multipart: Boundary not found|Boundary required|Unexpected end of multipart data|\w+ terminated early due to unexpected end of multipart data|Unexpected end of form|Malformed part header)$/;

export function toAppError(err: unknown): AppError | null {
  if (err instanceof AppError) return err;
  const e = err as Partial<FastifyError> & { statusCode?: number; code?: string; message?: string };
  const status = e?.statusCode;
  const code = e?.code ?? '';
  // A route schema refused a parameter: the message (params.ts) already names it.
  if (code === 'FST_ERR_VALIDATION' && Array.isArray((e as { validation?: unknown }).validation)) return new AppError('INVALID_PARAMETER', e.message ?? 'invalid parameters');
  const message = typeof e?.message === 'string' ? e.message : '';
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE' || code === 'FST_REQ_FILE_TOO_LARGE' || status === 413) {
    return new AppError('PAYLOAD_TOO_LARGE', 'request body is over its limit');
  }
  if (status === 401) return new AppError('UNAUTHORIZED', 'missing or wrong credentials');
  if (status === 429) return new AppError('RATE_LIMITED', 'too many requests');
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || status === 415) {
    return new AppError('INVALID_PARAMETER', 'unsupported content type: send a query string, form, multipart or JSON body', {}, 415);
  }
  if (code === 'FST_ERR_BAD_URL') return new AppError('INVALID_PARAMETER', 'the URL has a malformed percent-encoding');
  if (code === 'FST_ERR_MAX_PARAM_LENGTH') return new AppError('INVALID_PARAMETER', 'a path segment of the URL is too long', {}, 414);
  if (MALFORMED_MULTIPART.test(message) || code === 'FST_INVALID_MULTIPART_CONTENT_TYPE' || code === 'FST_MP_PREMATURE_CLOSE') {
    return new AppError('INVALID_PARAMETER', `malformed multipart body: ${message || code}`);
  }
  if (code.startsWith('FST_ERR_CTP') || code.startsWith('FST_') || (status !== undefined && status >= 400 && status < 500)) {
    return new AppError('INVALID_PARAMETER', `malformed request: ${message || 'bad request'}`);
  }
  // PostgreSQL unreachable (a query or connect past its deadline, a broken connection): nothing was done.
  if (isUnreachable(e)) return new AppError('UNAVAILABLE', 'a backing store is unreachable; nothing was done');
  if (code === 'SQLITE_BUSY' || code === 'SQLITE_FULL' || code === 'SQLITE_READONLY' || code === 'SQLITE_IOERR' || code === 'SQLITE_CANTOPEN' || code === 'ECONNREFUSED' || code === 'ETIMEDOUT') {
    return new AppError('UNAVAILABLE', 'a backing store is unreachable; nothing was done');
  }
  return null;
}

export function body(err: AppError): ErrorBody {
  return { isError: true, code: err.code, message: err.message };
}

function sendError(req: FastifyRequest, reply: FastifyReply, err: unknown) {
  const appErr = toAppError(err);
  if (!appErr) {
    req.log.error({ err }, 'unhandled error');
    return reply.code(500).type('application/json; charset=utf-8').send(body(new AppError('INTERNAL', 'internal error')));
  }
  for (const [k, v] of Object.entries(appErr.headers)) reply.header(k, v);
  if (appErr.code === 'UNAUTHORIZED' && req.url.startsWith('/api/')) {
    reply.header('WWW-Authenticate', 'Basic realm="telephony"');
  }
  if (appErr.status >= 500) req.log.warn({ code: appErr.code, msg: appErr.message }, 'request failed');
  return reply.code(appErr.status).type('application/json; charset=utf-8').send(body(appErr));
}

/** fastify's `frameworkErrors` option: errors raised before routing (bad percent-encoding, long segments). */
export function frameworkErrors(err: FastifyError, req: FastifyRequest, reply: FastifyReply) {
  return sendError(req, reply, err);
}

/**
 * fastify's `clientErrorHandler`: the HTTP parser refused the request before fastify saw it
 * (headers over Node's limit: 431; unparseable: 400). Answered on the raw socket, then closed.
 * (An `Expect` other than 100-continue and a missing Host are Node's answers outside the parser:
 * `expectationFailed` and `missingHost` below.)
 */
export function clientErrorHandler(err: Error & { code?: string }, socket: Socket) {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  let status = 400;
  let message = 'malformed HTTP request';
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    status = 431;
    message = 'request headers (or URL) over the size limit';
  } else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    status = 408;
    message = 'the request was not received in time';
  }
  const payload = JSON.stringify(body(new AppError('INVALID_PARAMETER', message, {}, status)));
  const reason = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' }[status];
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${reason}\r\nContent-Length: ${Buffer.byteLength(payload)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${payload}`);
  }
  socket.destroy(err);
}

/**
 * Node answers an `Expect` other than 100-continue with a bare 417 unless 'checkExpectation' has a
 * listener: this one gives it the contract's body. The request is not run.
 */
function expectationFailed(req: IncomingMessage, res: ServerResponse) {
  const payload = JSON.stringify(body(new AppError('INVALID_PARAMETER', `Expect: ${String(req.headers.expect).slice(0, 100)} cannot be met; only 100-continue is supported`, {}, 417)));
  res.shouldKeepAlive = false;
  res.writeHead(417, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(payload), connection: 'close' });
  res.end(payload);
  // The body the client may still send is not read: the connection ends with the answer.
  req.resume();
}

/**
 * Node's own answer to an HTTP/1.1 request without Host is a bare 400; the server is built with
 * `requireHostHeader: false` (app.ts) so that this check answers it with the contract's body.
 */
function missingHost(req: FastifyRequest): AppError | null {
  if (req.headers.host !== undefined || req.raw.httpVersionMajor !== 1 || req.raw.httpVersionMinor !== 1) return null;
  return new AppError('INVALID_PARAMETER', 'an HTTP/1.1 request needs a Host header', { connection: 'close' });
}

export function registerErrorHandling(app: FastifyInstance) {
  app.server.on('checkExpectation', expectationFailed);
  app.setErrorHandler((err, req, reply) => sendError(req, reply, err));
  app.setNotFoundHandler((req, reply) => {
    reply.code(404).type('application/json; charset=utf-8').send(body(new AppError('NOT_FOUND', `no such endpoint: ${req.method} ${req.url.split('?')[0]}`)));
  });
  // Before every other hook (rate limit, auth): an over-long URL is refused whatever it names.
  // Callback style: an async hook would cost every request a promise.
  app.addHook('onRequest', (req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    if (req.url.length > MAX_URL_LENGTH) return done(new AppError('INVALID_PARAMETER', `the URL is longer than ${MAX_URL_LENGTH} characters`, {}, 414));
    done(missingHost(req) ?? undefined);
  });
}
