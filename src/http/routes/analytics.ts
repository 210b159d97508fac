/** History for analysts (CONTRACT section 12): one call, call export, agent and service reports. */
import type { RouteRegistrar } from '../route.js';
import { defineRoute, Streamed } from '../route.js';
import { scopeService } from '../scope.js';
import { agentReport, callDetail, serviceReport } from '../../analytics/queries.js';
import { CONTENT_TYPES, EXPORT_FORMATS, exportRange, exportRows, exportStream } from '../../analytics/export.js';
import { EXPORT_COLUMNS } from '../../analytics/model.js';
import { json, obj, arrayOf, int, str, nullable, callSummary } from '../answers.js';
import type { JsonSchema } from '../route.js';

const webhookRecord = obj({
  callid: str,
  'call-duration': { type: 'string', description: 'seconds' },
  'agent-number': str,
  'customer-number': str,
  'end-time': { type: 'string', description: 'YYYY-MM-DD HH:MM:SS in the service timezone' },
  'start-time': { type: 'string', description: 'YYYY-MM-DD HH:MM:SS in the service timezone' },
  'recording-url': { type: 'string', description: 'present when the call was answered and recorded' },
  'call-type': { type: 'string', enum: ['incoming', 'outgoing'] },
  'virtual-number': str,
  disposition: { type: 'string', enum: ['answered', 'missed'] },
}, 'webhook record');

const socketEvent = obj({
  xnid: str,
  event: { type: 'string', enum: ['CustomerRing', 'CustomerUp', 'CustomerHangup', 'AgentRing', 'AgentUp', 'AgentHangup'] },
  agent: nullable(str),
  number: str,
  time: { type: 'integer', description: 'epoch ms' },
  data: str,
  svc: str,
  type: { type: 'string', enum: ['Inbound', 'Outbound'] },
}, 'socket call event');

const callStory = obj({
  xnid: str,
  svcId: int,
  summary: callSummary,
  record: {
    ...obj({
      ...(webhookRecord.properties as Record<string, JsonSchema>),
      callback: { type: 'boolean', description: 'present (true) when the caller asked for a callback' },
      'callback-of': { type: 'string', description: 'present on a callback: the call that asked for it' },
    }, 'webhook record'),
    nullable: true,
    description: 'the webhook record; null while the call is in progress',
  },
  agentIds: { ...arrayOf(int), description: 'agents whose leg rang, in the order they first rang' },
  queueId: { ...int, nullable: true, description: 'the queue the call joined (CONTRACT section 17); null when none' },
  events: { ...arrayOf(socketEvent), description: "the call's leg events in the order they were stored, as the socket sent them" },
}, 'one call');

const exportRow: JsonSchema = obj({
  ...(webhookRecord.properties as Record<string, JsonSchema>),
  'recording-url': nullable(str),
  'svc-id': int,
  'agent-id': { ...nullable(int), description: 'the agent who talked first' },
  'ivr-data': str,
}, `export row: ${EXPORT_COLUMNS.join(', ')}`);

const secondsByBreak = obj(Object.fromEntries([1, 2, 3, 4, 5, 6].map((c) => [String(c), int])), 'whole seconds on each break code 1-6');
const agentReportItem = obj({
  agentId: int,
  name: str,
  offered: { type: 'integer', description: "the agent's AgentRing events" },
  answered: { type: 'integer', description: "the agent's AgentUp events" },
  missed: { type: 'integer', description: 'offered - answered' },
  talkSeconds: { type: 'integer', description: 'AgentUp to AgentHangup, counted in the period of the AgentUp' },
  avgTalkSeconds: { type: 'number', description: 'talkSeconds / answered, one decimal (0 when none)' },
  loginSeconds: { type: 'integer', description: 'logged in (breaks, calls and wrap-up included) within the period' },
  breakSeconds: secondsByBreak,
}, 'agent report item');
const serviceReportItem = obj({
  start: { type: 'integer', description: 'epoch ms: start of the interval in the service timezone' },
  inbound: int,
  outbound: int,
  answered: int,
  missed: int,
  abandoned: { type: 'integer', description: 'inbound callers who hung up while waiting in the queue' },
  serviceLevel: { ...nullable({ type: 'number' }), description: '% of queued inbound calls answered within sl-seconds; null when none queued' },
  avgWaitSeconds: { ...nullable({ type: 'number' }), description: 'mean queue wait of answered inbound calls; null when none' },
}, 'service report item');

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
    response: json(callStory),
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
    response: {
      description: 'the rows, streamed: a JSON array, one JSON object a line, CSV with a header row, or an xlsx workbook with one sheet named calls',
      content: {
        'application/json': arrayOf(exportRow),
        'application/x-ndjson': { type: 'string', description: 'one export row as JSON per line' },
        'text/csv': { type: 'string', description: `header ${EXPORT_COLUMNS.join(',')}; RFC 4180; null is an empty cell; cells starting with = + - @ tab or CR are prefixed with '` },
        'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': { type: 'string', format: 'binary' },
      },
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
    response: json(arrayOf(agentReportItem), 'one item per agent of the service, ordered by agent id'),
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
    response: json(arrayOf(serviceReportItem), 'one item per interval, oldest first, empty intervals included (at most 1,000)'),
    handler: async ({ p, user }) => {
      const svcId = scopeService(user, p['svc-id'], 'svc-id', true);
      const { from, to } = exportRange(ctx.now(), p.from, p.to, REPORT_RANGE_MS);
      await ctx.analytics.caughtUp();
      return serviceReport(ctx, svcId, from, to, (p.interval ?? 'hour') as 'hour' | 'day', p['sl-seconds'] ?? 20);
    },
  });
};
