/** Renders every failure as the contract's error body; never a stack trace, never a 500 for bad input. */
import type { FastifyError, FastifyInstance } from 'fastify';
import { AppError, type ErrorCode } from '../domain/errors.js';

export interface ErrorBody {
  isError: true;
  code: ErrorCode;
  message: string;
}

export function toAppError(err: unknown): AppError | null {
  if (err instanceof AppError) return err;
  const e = err as Partial<FastifyError> & { statusCode?: number; code?: string; message?: string };
  const status = e?.statusCode;
  const code = e?.code ?? '';
  // A route schema refused a parameter: the message (params.ts) already names it.
  if (code === 'FST_ERR_VALIDATION' && Array.isArray((e as { validation?: unknown }).validation)) return new AppError('INVALID_PARAMETER', e.message ?? 'invalid parameters');
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE' || code === 'FST_REQ_FILE_TOO_LARGE' || status === 413) {
    return new AppError('PAYLOAD_TOO_LARGE', 'request body is over its limit');
  }
  if (status === 401) return new AppError('UNAUTHORIZED', 'missing or wrong credentials');
  if (status === 429) return new AppError('RATE_LIMITED', 'too many requests');
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || status === 415) {
    return new AppError('INVALID_PARAMETER', 'unsupported content type: send a query string, form, multipart or JSON body');
  }
  if (code.startsWith('FST_ERR_CTP') || code.startsWith('FST_') || code.startsWith('FST_INVALID_MULTIPART') || (status !== undefined && status >= 400 && status < 500)) {
    return new AppError('INVALID_PARAMETER', `malformed request: ${e.message ?? 'bad request'}`);
  }
  if (code === 'SQLITE_BUSY' || code === 'ECONNREFUSED' || code === 'ETIMEDOUT') {
    return new AppError('UNAVAILABLE', 'a backing store is unreachable; nothing was done');
  }
  return null;
}

export function body(err: AppError): ErrorBody {
  return { isError: true, code: err.code, message: err.message };
}

export function registerErrorHandling(app: FastifyInstance) {
  app.setErrorHandler((err, req, reply) => {
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
  });
  app.setNotFoundHandler((req, reply) => {
    reply.code(404).type('application/json; charset=utf-8').send(body(new AppError('NOT_FOUND', `no such endpoint: ${req.method} ${req.url.split('?')[0]}`)));
  });
}
