/** GET /api/v1/queues (CONTRACT section 17): the queues now, for supervisors. */
import type { RouteRegistrar } from '../route.js';
import { defineRoute } from '../route.js';
import { json, queuesAnswer } from '../answers.js';
import { scopeService } from '../scope.js';
import { forbidden } from '../../domain/errors.js';
import { queueStates } from '../../queries/queues.js';

export const queueRoutes: RouteRegistrar = (app, ctx) => {
  defineRoute(app, ctx, {
    method: 'GET',
    url: '/api/v1/queues',
    summary: "The service's queues now: waiting callers in the order they are served, free agents, expected wait",
    tags: ['dashboard'],
    auth: 'user',
    response: json(queuesAnswer),
    params: {
      'svc-id': { type: 'integer', min: 1, description: "the service (default: the credentials' first)" },
    },
    handler: async ({ p, user }) => {
      if (!user.admin) throw forbidden('the queues need admin credentials');
      return queueStates(ctx, scopeService(user, p['svc-id']));
    },
  });
};
