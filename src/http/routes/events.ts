/**
 * `GET /api/v1/events`: live events over HTTP as server-sent events (CONTRACT section 13).
 * Headers go out at once; a cursor (`Last-Event-ID`, else `?after=`) resumes right after the
 * message that carried it.
 */
import type { FastifyRequest } from 'fastify';
import type { RouteRegistrar } from '../route.js';
import { forbidden, invalid } from '../../domain/errors.js';
import { routeSchema } from '../route.js';
import { lastValues, normalize, type ParamSpecs } from '../params.js';
import { scopeService } from '../scope.js';
import { LiveEventStream, type StreamScope } from '../live/event-stream.js';
import { recordRequest } from '../observability.js';

export const eventRoutes: RouteRegistrar = (app, ctx) => {
  const open = new Set<LiveEventStream>();
  ctx.metrics.sources.liveStreams = () => open.size;
  // Open streams never end by themselves: close them so the server can stop.
  app.addHook('preClose', async () => {
    for (const s of open) s.close();
  });

  const params = {
    'svc-id': { type: 'integer', min: 1, description: "the service (default: the user's first service)" },
    after: { type: 'string', maxLength: 64, description: 'a cursor: resume right after the message that carried it (the `Last-Event-ID` header wins when both are given)' },
  } satisfies ParamSpecs;
  const schema = routeSchema({
    method: 'GET',
    url: '/api/v1/events',
    summary: 'Live events of a service as server-sent events',
    description:
      'Answers `text/event-stream` with its headers at once. Messages: `event: call` (data: the socket event JSON) and `event: agent` (data: the agent record), ' +
      'each with `id:` an opaque cursor, valid on this service only. Reconnect with `Last-Event-ID: <cursor>` (or `?after=<cursor>`) to resume right after that message: ' +
      "nothing lost, nothing repeated. A comment line every 15 s keeps proxies from closing the stream. Admin credentials get every event of the service; agent credentials their own agent's and the events of calls their agent is on.",
    tags: ['events'],
    auth: 'user',
    params,
    errors: [400, 401, 403, 429, 503],
    handler: () => undefined,
  });
  (schema.response as Record<string, unknown>)[200] = {
    description: 'The stream: `event: call|agent`, `id: <cursor>`, `data: <JSON>` messages and `: keep-alive` comments',
    content: { 'text/event-stream': { schema: { type: 'string' } } },
  };

  app.route({
    method: 'GET',
    url: '/api/v1/events',
    schema,
    // After the credentials, before fastify validates: the query read as CONTRACT section 2 says.
    preValidation: [
      app.basicAuth,
      async (req: FastifyRequest) => {
        req.query = normalize(params, lastValues((req.query ?? {}) as Record<string, unknown>));
      },
    ] as never,
    handler: async (req, reply) => {
      const user = req.user!;
      const p = req.query as { 'svc-id'?: number; after?: string };
      const svcId = scopeService(user, p['svc-id']);
      if (!user.admin && user.agentId === null) throw forbidden('these credentials belong to no agent');
      const scope: StreamScope = { svcId, agentId: user.admin ? null : user.agentId };

      const head = await ctx.events.headPosition();
      const lastEventId = req.headers['last-event-id'];
      const cursor = typeof lastEventId === 'string' && lastEventId !== '' ? lastEventId : p.after;
      let after = head;
      if (cursor !== undefined) {
        const position = ctx.cursors.decode(svcId, cursor);
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
