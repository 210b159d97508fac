/** History for analysts (CONTRACT section 12): one call, call export, agent and service reports. */
import type { RouteRegistrar } from './index.js';
import { defineRoute, Streamed } from '../route.js';
import { scopeService } from '../scope.js';
import { agentReport, callDetail, serviceReport } from '../../analytics/queries.js';
import { CONTENT_TYPES, EXPORT_FORMATS, exportRange, exportRows, exportStream } from '../../analytics/export.js';

const rangeParams = {
  from: { type: 'epoch', description: 'epoch ms, inclusive; default: a day before `to`' },
  to: { type: 'epoch', description: 'epoch ms, exclusive; default: now' },
} as const;

/** Reports are not limited to 92 days (the service report is limited by its interval count). */
const REPORT_RANGE_MS = Number.MAX_SAFE_INTEGER;

export const analyticsRoutes: RouteRegistrar = (app, ctx) => {
  defineRoute(app, ctx, {
    method: 'GET',
    url: '/api/v1/calls/:callTxnId',
    summary: "One call's story: summary, webhook record (null while it runs), agents rung, leg events as the socket sent them",
    tags: ['history'],
    auth: 'user',
    pathParams: { callTxnId: { type: 'string', required: true, maxLength: 64 } },
    handler: ({ req, user }) => callDetail(ctx, user, (req.params as { callTxnId: string }).callTxnId),
  });

  defineRoute(app, ctx, {
    method: 'GET',
    url: '/api/v1/calls',
    summary: 'Export of the ended calls of a service that began in [from, to), oldest first, streamed as json, jsonl, csv or xlsx',
    tags: ['history'],
    auth: 'user',
    params: {
      'svc-id': { type: 'integer', required: true, min: 1 },
      ...rangeParams,
      format: { type: 'string', enum: EXPORT_FORMATS, description: 'json (default), jsonl, csv or xlsx' },
    },
    handler: async ({ p, user }) => {
      const svcId = scopeService(user, p['svc-id'], 'svc-id', true);
      const { from, to } = exportRange(ctx.now(), p.from, p.to);
      const format = (p.format ?? 'json') as (typeof EXPORT_FORMATS)[number];
      await ctx.analytics.caughtUp();
      const headers: Record<string, string> =
        format === 'csv' || format === 'xlsx' ? { 'content-disposition': `attachment; filename="calls-${svcId}-${from}-${to}.${format}"` } : {};
      return new Streamed(CONTENT_TYPES[format], exportStream(exportRows(ctx.analytics.store, svcId, from, to), format), headers);
    },
  });

  defineRoute(app, ctx, {
    method: 'GET',
    url: '/api/v1/reports/agents',
    summary: 'Per agent over [from, to) widened to whole days: offered, answered, missed, talk, login and break seconds',
    tags: ['reports'],
    auth: 'user',
    params: { 'svc-id': { type: 'integer', required: true, min: 1 }, ...rangeParams },
    handler: async ({ p, user }) => {
      const svcId = scopeService(user, p['svc-id'], 'svc-id', true);
      const { from, to } = exportRange(ctx.now(), p.from, p.to, REPORT_RANGE_MS);
      await ctx.analytics.caughtUp();
      return agentReport(ctx, svcId, from, to);
    },
  });

  defineRoute(app, ctx, {
    method: 'GET',
    url: '/api/v1/reports/service',
    summary: "Per hour or day of the service's timezone: inbound, outbound, answered, missed, abandoned, service level, average wait",
    tags: ['reports'],
    auth: 'user',
    params: {
      'svc-id': { type: 'integer', required: true, min: 1 },
      ...rangeParams,
      interval: { type: 'string', enum: ['hour', 'day'], description: 'hour (default) or day' },
      'sl-seconds': { type: 'integer', min: 0, max: 86_400, description: 'service level threshold in seconds; default 20' },
    },
    handler: async ({ p, user }) => {
      const svcId = scopeService(user, p['svc-id'], 'svc-id', true);
      const { from, to } = exportRange(ctx.now(), p.from, p.to, REPORT_RANGE_MS);
      await ctx.analytics.caughtUp();
      return serviceReport(ctx, svcId, from, to, (p.interval ?? 'hour') as 'hour' | 'day', p['sl-seconds'] ?? 20);
    },
  });
};
