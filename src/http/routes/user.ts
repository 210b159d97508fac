/** The caller's own user record: GET/POST /api/v1/user and POST /api/v1/user-password. */
import { createHash } from 'node:crypto';
import type { RouteRegistrar } from '../route.js';
import { defineRoute } from '../route.js';
import { TRUE, json, userRecord } from '../answers.js';
import { handleCommand } from '../../commands/decider.js';
import { userDecider } from '../../commands/user/user.js';
import { streams } from '../../domain/streams.js';
import { invalid, notFound } from '../../domain/errors.js';
import { hashPassword } from '../../domain/password.js';
import type { UserDoc } from '../../projections/users.js';

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
      const doc = await ctx.reads.get<UserDoc>('users', String(user.id));
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
      const result = await handleCommand(ctx.events, streams.user(user.id), userDecider, {
        type: 'UpdateProfile',
        userId: user.id,
        email: p.email,
        number: p.number,
      });
      await ctx.sync.waitFor(result.position);
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
      const result = await handleCommand(ctx.events, streams.user(user.id), userDecider, {
        type: 'ChangePassword',
        userId: user.id,
        passwordHash,
      });
      await ctx.sync.waitFor(result.position);
      return true;
    },
  });
};
