/** GET /recordings/<xnid>.wav?exp=&sig=: a call's recording at a signed, expiring URL (no credentials). */
import type { FastifySchema } from 'fastify';
import type { RouteRegistrar } from '../route.js';
import { AppError, forbidden, notFound } from '../../domain/errors.js';
import { simulatedRecording } from '../../domain/recording.js';
import { getCall } from '../../queries/calls.js';
import { render } from '../route.js';

const FILE_RE = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.wav$/;

export const recordingRoutes: RouteRegistrar = (app, ctx) => {
  const error = (description: string) => ({ description, $ref: 'ErrorBody#' });
  const schema: FastifySchema = {
    summary: 'A call recording at the signed, expiring URL a call summary or webhook handed out; no credentials',
    operationId: 'getRecording',
    tags: ['calls'],
    params: { type: 'object', properties: { file: { type: 'string', description: '<call id>.wav' } }, required: ['file'] },
    querystring: { type: 'object', properties: { exp: { type: 'string', description: 'expiry, epoch seconds' }, sig: { type: 'string', description: 'signature' } } },
    response: {
      200: { description: 'the recording', content: { 'audio/wav': { schema: { type: 'string', format: 'binary' } } } },
      400: error('INVALID_PARAMETER: a malformed exp or sig'),
      403: error('FORBIDDEN: a bad signature or an expired URL'),
      404: error('NOT_FOUND: no such recording'),
    },
  };
  app.get('/recordings/:file', { schema }, async (req, reply) => {
    try {
      const m = FILE_RE.exec((req.params as { file: string }).file);
      if (!m) throw notFound('no such recording');
      const q = req.query as { exp?: string; sig?: string };
      const check = ctx.signer.verify(m[1]!, q.exp, q.sig, ctx.now());
      if (check === 'bad') throw forbidden('the recording URL signature is not valid');
      if (check === 'expired') throw forbidden('the recording URL has expired');
      // Read-your-writes as for every request (CONTRACT section 2): a call that ended is found.
      await ctx.sync.caughtUp();
      const call = await getCall(ctx, m[1]!);
      if (!call?.recording) throw notFound('no such recording');
      // The simulator records a short tone; a real switch's recording store plugs in here.
      const wav = simulatedRecording(Math.min(Math.max(call.durationS, 1), 5));
      return reply.type('audio/wav').header('cache-control', 'private, max-age=300').send(wav);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      const r = render({ isError: true, code: err.code, message: err.message }, err.status);
      return reply.code(r.status).type(r.contentType).send(r.payload);
    }
  });
};
