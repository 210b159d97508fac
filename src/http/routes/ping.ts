import type { RouteRegistrar } from '../route.js';
import { defineRoute, text } from '../route.js';
import { textAnswer } from '../answers.js';

export const pingRoutes: RouteRegistrar = (app, ctx) => {
  defineRoute(app, ctx, {
    method: 'GET',
    url: '/api/v1/ping',
    summary: 'Liveness check with credentials',
    tags: ['misc'],
    auth: 'user',
    response: textAnswer('pong', 'pong'),
    handler: () => text('pong'),
  });
};
