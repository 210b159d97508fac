/** GET /api/v1/dashboard and GET /api/v1/transfer-details. */
import type { RouteRegistrar } from '../route.js';
import { defineRoute } from '../route.js';
import { json, dashboardAnswer, transferDetails } from '../answers.js';
import { scopeService } from '../scope.js';
import { dashboard, dashboardCached } from '../../queries/dashboard.js';
import { dashboardAsOf, pastInstant } from '../../analytics/queries.js';
import { serviceAgents } from '../../queries/agents.js';
import { getService } from '../../queries/services.js';
import { notFound } from '../../domain/errors.js';

export const dashboardRoutes: RouteRegistrar = (app, ctx) => {
  defineRoute(app, ctx, {
    method: 'GET',
    url: '/api/v1/dashboard',
    summary: "The service's live dashboard",
    tags: ['dashboard'],
    auth: 'user',
    response: json(dashboardAnswer),
    params: {
      'svc-id': { type: 'integer', required: true, min: 1 },
      at: { type: 'epoch', description: 'epoch ms: answer as the dashboard stood at that instant (CONTRACT section 12)' },
    },
    // Not async: a kept answer goes out in the same turn (src/queries/answer-cache.ts).
    handler: ({ p, user }) => {
      const svcId = scopeService(user, p['svc-id'], 'svc-id', true);
      if (p.at === undefined) return dashboardCached(ctx, user, svcId) ?? dashboard(ctx, user, svcId);
      const at = pastInstant(ctx, p.at);
      return ctx.analytics.caughtUp().then(() => dashboardAsOf(ctx, user, svcId, at));
    },
  });

  defineRoute(app, ctx, {
    method: 'GET',
    url: '/api/v1/transfer-details',
    summary: 'Queues, services and agents a call can be transferred to',
    tags: ['calls'],
    auth: 'user',
    response: json(transferDetails),
    params: {
      'svc-id': { type: 'integer', min: 1 },
      'queue-id': { type: 'integer', min: 0 },
    },
    handler: async ({ p, user }) => {
      const svcId = scopeService(user, p['svc-id']);
      const service = await getService(ctx, svcId);
      if (!service) throw notFound(`service ${svcId} not found`);
      const services: Record<string, string> = {};
      for (const id of user.services) services[String(id)] = (await getService(ctx, id))?.name ?? '';
      return {
        svcid: svcId,
        queueid: p['queue-id'] ?? null,
        queues: Object.fromEntries(service.queues.map((q) => [String(q.id), q.name])),
        services,
        agents: Object.fromEntries((await serviceAgents(ctx, svcId)).map((a) => [String(a.agentId), a.name])),
      };
    },
  });
};
