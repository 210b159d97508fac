/** PUT /ops/v1/provisioning: the operator applies a provisioning document (CONTRACT section 3). */
import type { RouteRegistrar } from '../route.js';
import { defineRoute } from '../route.js';
import { json, obj, int } from '../answers.js';
import { applyProvisioning } from '../../commands/provisioning/provision.js';
import { invalid } from '../../domain/errors.js';

export const provisioningRoutes: RouteRegistrar = (app, ctx) => {
  defineRoute(app, ctx, {
    method: 'PUT',
    url: '/ops/v1/provisioning',
    summary: 'Apply a provisioning document, idempotently',
    tags: ['operator'],
    auth: 'operator',
    response: json(obj({ services: int, agents: int, users: int }), 'how many of each the document holds'),
    rawJsonBody: true,
    // A document with a large customer list outgrows the API's 1 MiB; it is operator-only.
    bodyLimit: 16 * 1024 * 1024,
    handler: async ({ req }) => {
      if (!req.body || typeof req.body !== 'object') throw invalid('the provisioning document must be a JSON object');
      const result = await applyProvisioning(ctx.events, req.body);
      await ctx.sync.waitFor(result.position);
      return { services: result.services, agents: result.agents, users: result.users };
    },
  });
};
