/** GET /recordings/<xnid>.wav?exp=&sig=: a call's recording at a signed, expiring URL (no credentials). */
import type { RouteRegistrar } from './index.js';
import { AppError, forbidden, notFound } from '../../domain/errors.js';
import { simulatedRecording } from '../../domain/recording.js';
import type { CallDoc } from '../../projections/calls.js';
import { render } from '../route.js';

const FILE_RE = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.wav$/;

export const recordingRoutes: RouteRegistrar = (app, ctx) => {
  app.get('/recordings/:file', { schema: { summary: 'A call recording (signed URL)', tags: ['calls'] } }, async (req, reply) => {
    try {
      const m = FILE_RE.exec((req.params as { file: string }).file);
      if (!m) throw notFound('no such recording');
      const q = req.query as { exp?: string; sig?: string };
      const check = ctx.signer.verify(m[1]!, q.exp, q.sig, ctx.now());
      if (check === 'bad') throw forbidden('the recording URL signature is not valid');
      if (check === 'expired') throw forbidden('the recording URL has expired');
      const call = await ctx.reads.get<CallDoc>('calls', m[1]!);
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
