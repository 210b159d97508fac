/** GET /api/v1/queues and POST /api/v1/queue-callback (CONTRACT section 17): the queues now, callbacks. */
import type { RouteRegistrar } from '../route.js';
import { defineRoute } from '../route.js';
import { json, obj, queuesAnswer } from '../answers.js';
import { runCallCommand } from '../../commands/call/run.js';
import { newCallId } from '../../commands/call/place.js';
import { callFor } from '../../queries/calls.js';
import { scopeService } from '../scope.js';
import { forbidden } from '../../domain/errors.js';
import { queueList } from '../../queries/queues.js';

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
      return queueList(ctx, scopeService(user, p['svc-id']));
    },
  });

  defineRoute(app, ctx, {
    method: 'POST',
    url: '/api/v1/queue-callback',
    summary: 'A waiting caller is called back instead: the call ends and its place in the queue is kept',
    tags: ['calls'],
    auth: 'user',
    response: json(obj({ callbackId: { type: 'string' } }), 'the callback; the callback call will have this id'),
    params: {
      xnid: { type: 'uuid', required: true, description: 'the waiting call' },
    },
    handler: async ({ p, user }) => {
      if (!user.admin) throw forbidden('callbacks need admin credentials');
      const xnid = p.xnid.toLowerCase();
      await callFor(ctx, user, xnid);
      const callbackId = newCallId();
      // 409 from the decider when the call is not waiting in a queue.
      await runCallCommand(ctx, xnid, { type: 'RequestCallback', callbackId, time: ctx.now() });
      return { callbackId };
    },
  });
};
