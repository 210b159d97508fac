/**
 * Operations endpoints (CONTRACT section 13): liveness, readiness and Prometheus metrics.
 * Outside /api/v1 and the OpenAPI document: they are for orchestrators and scrapers.
 */
import type { RouteRegistrar } from '../route.js';
import { operatorGuard } from '../auth/operator-token.js';

const JSON_TYPE = 'application/json; charset=utf-8';

export const healthRoutes: RouteRegistrar = (app, ctx) => {
  app.get('/healthz', { schema: { hide: true } }, async (_req, reply) => reply.type(JSON_TYPE).send('{"status":"ok"}'));

  app.get('/readyz', { schema: { hide: true } }, async (_req, reply) => {
    const r = await ctx.readiness.check();
    if (r.ready) return reply.type(JSON_TYPE).send('{"status":"ready"}');
    return reply.code(503).type(JSON_TYPE).send(JSON.stringify({ status: 'not ready', reason: r.reason }));
  });

  // The token only: a scrape must not wait for the read models (operatorAuth does).
  const checkToken = operatorGuard(ctx.config.operatorToken, app.authFailures);
  app.get(
    '/metrics',
    {
      schema: { hide: true },
      preValidation: async (req) => checkToken(req),
    },
    async (_req, reply) => reply.type(ctx.metrics.contentType).send(await ctx.metrics.render()),
  );
};
