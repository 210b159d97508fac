/** GET /api/v1/login in its three forms (CONTRACT section 4). */
import type { RouteRegistrar } from '../route.js';
import { defineRoute } from '../route.js';
import { json, arrayOf, int, loginInfoSchema } from '../answers.js';
import { scopeService } from '../scope.js';
import type { AuthUser } from '../../domain/auth-user.js';

const loginInfo = (user: AuthUser, serviceId: number) => ({
  agentId: user.agentId,
  isAdmin: user.admin,
  serviceId,
});

export const loginRoutes: RouteRegistrar = (app, ctx) => {
  defineRoute(app, ctx, {
    method: 'GET',
    url: '/api/v1/login',
    summary: 'Login info for a service, or the assigned service ids',
    tags: ['users'],
    auth: 'user',
    response: json({ oneOf: [loginInfoSchema, arrayOf(int)] }, 'login info, or the service ids when the user has several and names none'),
    params: { 'svc-id': { type: 'integer', min: 1 } },
    handler: ({ p, user }) => {
      if (p['svc-id'] !== undefined) return loginInfo(user, scopeService(user, p['svc-id']));
      if (user.services.length === 1) return loginInfo(user, user.services[0]!);
      return user.services;
    },
  });
};
