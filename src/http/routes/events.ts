/**
 * `GET /api/v1/events`: live events over HTTP as server-sent events (CONTRACT section 13).
 * Headers go out at once; a cursor (`Last-Event-ID`, else `?after=`) resumes right after the
 * message that carried it.
 */
import type { FastifyRequest } from 'fastify';
import type { RouteRegistrar } from './index.js';
import { forbidden, invalid } from '../../domain/errors.js';
import { decodeCursor } from '../../domain/cursor.js';
import { scopeService } from '../scope.js';
import { LiveEventStream, type StreamScope } from '../live/event-stream.js';
import { recordRequest } from '../observability.js';

function queryParam(req: FastifyRequest, name: string): string | undefined {
  const v = (req.query as Record<string, unknown> | undefined)?.[name];
  if (v === undefined || v === null) return undefined;
  return String(Array.isArray(v) ? v[v.length - 1] : v);
}

export const eventRoutes: RouteRegistrar = (app, ctx) => {
  const open = new Set<LiveEventStream>();
  ctx.metrics.sources.liveStreams = () => open.size;
  // Open streams never end by themselves: close them so the server can stop.
  app.addHook('preClose', async () => {
    for (const s of open) s.close();
  });

  app.route({
    method: 'GET',
    url: '/api/v1/events',
    schema: {
      summary: 'Live events of a service as server-sent events (text/event-stream)',
      description:
        'Messages `event: call` (data: the socket event JSON) and `event: agent` (data: the agent record), each with `id:` an opaque cursor. ' +
        'Reconnect with `Last-Event-ID: <cursor>` (or `?after=<cursor>`) to resume right after that message. A comment line is sent every 15 s. ' +
        "Admin credentials get every event of the service; agent credentials their own agent's and those of its calls.",
      tags: ['events'],
      querystring: {
        type: 'object',
        properties: {
          'svc-id': { type: 'string', pattern: '^[0-9]+$', description: "the service (default: the user's first service)" },
          after: { type: 'string', description: 'a cursor: resume after the message that carried it' },
        },
      },
      security: [{ basic: [] }],
    },
    preValidation: app.basicAuth,
    handler: async (req, reply) => {
      const user = req.user!;
      const svcRaw = queryParam(req, 'svc-id');
      if (svcRaw !== undefined && !/^\d{1,15}$/.test(svcRaw)) throw invalid('svc-id must be an integer');
      const svcId = scopeService(user, svcRaw === undefined ? undefined : Number(svcRaw));
      if (!user.admin && user.agentId === null) throw forbidden('these credentials belong to no agent');
      const scope: StreamScope = { svcId, agentId: user.admin ? null : user.agentId };

      const head = await ctx.events.headPosition();
      const lastEventId = req.headers['last-event-id'];
      const cursor = typeof lastEventId === 'string' && lastEventId !== '' ? lastEventId : queryParam(req, 'after');
      let after = head;
      if (cursor !== undefined) {
        const position = decodeCursor(svcId, cursor);
        if (position === null || position > head) throw invalid(`${cursor === lastEventId ? 'Last-Event-ID' : 'after'}: not a cursor of service ${svcId}`);
        after = position;
      }

      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
        'x-request-id': req.id,
      });
      res.flushHeaders();
      const stream = new LiveEventStream(ctx, res, scope, ctx.config.liveHeartbeatMs);
      open.add(stream);
      try {
        await stream.run(after);
      } catch (err) {
        req.log.warn({ err }, 'event stream failed');
      } finally {
        open.delete(stream);
        stream.close();
        recordRequest(ctx.metrics, req, 200, reply.elapsedTime);
      }
    },
  });
};
