/** The caller's own user record: GET/POST /api/v1/user and POST /api/v1/user-password. */
import { createHash } from 'node:crypto';
import type { RouteRegistrar } from '../route.js';
import { defineRoute } from '../route.js';
import { TRUE, json, userRecord } from '../answers.js';
import { runUserCommand } from '../../commands/user/run.js';
import { invalid, notFound } from '../../domain/errors.js';
import { hashPassword } from '../../domain/password.js';
import { getUser } from '../../queries/users.js';

const EMAIL_RE = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;

export const userRoutes: RouteRegistrar = (app, ctx) => {
  defineRoute(app, ctx, {
    method: 'GET',
    url: '/api/v1/user',
    summary: 'The user record of the credentials',
    tags: ['users'],
    auth: 'user',
    response: json(userRecord),
    handler: async ({ user }) => {
      const doc = await getUser(ctx, user.id);
      if (!doc) throw notFound('user not found');
      return {
        id: doc.id,
        name: doc.name,
        // A digest of the stored hash: stable, and nothing crackable leaks (CONTRACT section 4).
        password: createHash('sha256').update(doc.passwordHash).digest('hex'),
        email: doc.email,
        number: doc.number,
        active: doc.active,
        username: doc.username,
        verified: true,
        login_id: doc.username,
      };
    },
  });

  defineRoute(app, ctx, {
    method: 'POST',
    url: '/api/v1/user',
    summary: "Update the caller's e-mail and/or number",
    tags: ['users'],
    auth: 'user',
    response: TRUE,
    params: {
      email: { type: 'string', maxLength: 320 },
      number: { type: 'phone' },
    },
    handler: async ({ p, user }) => {
      if (p.email === undefined && p.number === undefined) throw invalid('email or number is required');
      if (p.email !== undefined && !EMAIL_RE.test(p.email)) throw invalid('email is not an e-mail address');
      await runUserCommand(ctx, user.id, {
        type: 'UpdateProfile',
        userId: user.id,
        email: p.email,
        number: p.number,
      });
      return true;
    },
  });

  defineRoute(app, ctx, {
    method: 'POST',
    url: '/api/v1/user-password',
    summary: "Change the caller's password",
    tags: ['users'],
    auth: 'user',
    response: TRUE,
    params: { new: { type: 'string', required: true, minLength: 8, maxLength: 1000 } },
    handler: async ({ p, user }) => {
      const passwordHash = await hashPassword(p.new);
      await runUserCommand(ctx, user.id, {
        type: 'ChangePassword',
        userId: user.id,
        passwordHash,
      });
      return true;
    },
  });
};
