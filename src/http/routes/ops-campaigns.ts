/** GET /ops/v1/campaigns?svc-id=: each dialer campaign's progress. */
import type { RouteRegistrar } from '../route.js';
import { defineRoute } from '../route.js';
import { json, arrayOf, campaignProgress } from '../answers.js';
import { campaignsOf } from '../../queries/campaigns.js';

export const campaignOpsRoutes: RouteRegistrar = (app, ctx) => {
  defineRoute(app, ctx, {
    method: 'GET',
    url: '/ops/v1/campaigns',
    summary: "Dialer campaigns' progress",
    tags: ['operator'],
    auth: 'operator',
    response: json(arrayOf(campaignProgress)),
    params: { 'svc-id': { type: 'integer', required: true, min: 1 } },
    handler: async ({ p }) => {
      const docs = await campaignsOf(ctx, p['svc-id']);
      const now = ctx.now();
      return docs.map((c) => ({
        svcId: c.svcId,
        campaignId: c.campaignId,
        endTime: c.endTime,
        active: c.endTime > now,
        total: c.total,
        dialled: c.dialled,
        answered: c.answered,
        missed: c.missed,
        pending: c.pending,
        skipped: c.skipped,
        dnc: c.dnc ?? 0,
        dropped: c.dropped,
        uploads: c.uploads,
      }));
    },
  });
};
