import type { RouteRegistrar } from './index.js';
import { defineRoute, text } from '../route.js';

export const pingRoutes: RouteRegistrar = (app, ctx) => {
  defineRoute(app, ctx, {
    method: 'GET',
    url: '/api/v1/ping',
    summary: 'Liveness check with credentials',
    tags: ['misc'],
    auth: 'user',
    handler: () => text('pong'),
  });
};
