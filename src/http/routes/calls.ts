/** Calls: placing them and the control signals (hangup, transfer, add-call, whisper-spy). */
import type { RouteRegistrar } from './index.js';
import { defineRoute, text } from '../route.js';
import { TRUE, json, obj, uuid, actionResult } from '../answers.js';
import { randomUUID } from 'node:crypto';
import { scheduleDecider } from '../../commands/schedule/schedule.js';
import { scopeService } from '../scope.js';
import type { Context } from '../../context.js';
import type { AuthUser } from '../auth/authenticator.js';
import { handleCommand } from '../../commands/decider.js';
import { callDecider, type CallCommand, type CallStartedData } from '../../commands/call/call.js';
import { isFree } from '../../commands/agent/agent.js';
import { streams } from '../../domain/streams.js';
import { conflict, forbidden, invalid, notFound } from '../../domain/errors.js';
import { dayOf } from '../../domain/time.js';
import type { ServiceDoc } from '../../projections/services.js';
import { findAgent, getAgent, targetAgent } from '../../queries/agents.js';
import { callFor } from '../../queries/calls.js';
import { newCallId } from '../../workers/call-flow/manager.js';
import { doNotCall } from '../../queries/compliance.js';
import { doNotCallMessage } from '../../domain/do-not-call.js';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export interface PlaceCall {
  svcId: number;
  number: string;
  origin: CallStartedData['origin'];
  namedAgentId: number | null;
  agentFirst: boolean;
  recording: boolean;
  msgToAgent?: string;
  countryCode?: string;
  skillId?: number | null;
  wrapUp?: boolean;
  userId: number | null;
  source?: Record<string, unknown> | null;
  xnid?: string;
}

/** Appends CallStarted for an outbound call; the call-flow worker dials it. */
export async function placeOutboundCall(ctx: Context, c: PlaceCall): Promise<{ xnid: string; position: number }> {
  const data = await outboundCallStarted(ctx, c);
  const r = await handleCommand(ctx.events, streams.call(data.xnid), callDecider, { type: 'Start', data });
  return { xnid: data.xnid, position: r.position };
}

/** The CallStarted event of an outbound call. */
export async function outboundCallStarted(ctx: Context, c: PlaceCall): Promise<CallStartedData> {
  const service = await ctx.reads.get<ServiceDoc>('services', String(c.svcId));
  if (!service) throw notFound(`service ${c.svcId} not found`);
  const xnid = c.xnid ?? newCallId();
  const time = ctx.now();
  const data: CallStartedData = {
    xnid,
    svcId: c.svcId,
    direction: 'Outbound',
    origin: c.origin,
    customerNumber: c.number,
    did: service.dids[0] ?? '',
    data: '',
    recording: c.recording,
    timezone: service.timezone,
    day: dayOf(time, service.timezone),
    agentFirst: c.agentFirst,
    namedAgentId: c.namedAgentId,
    skillId: c.skillId ?? null,
    msgToAgent: c.msgToAgent ?? '',
    countryCode: c.countryCode ?? '',
    userId: c.userId,
    blocked: false,
    wrapUp: c.wrapUp ?? false,
    source: c.source ?? null,
    time,
  };
  return data;
}

export interface OutboundParams {
  number: string;
  serviceId?: number;
  agentSip?: string;
  agentNumber?: string;
  agentDialFirst?: boolean;
  recording?: boolean;
  msgToAgent?: string;
  countryCode?: string;
  skillId?: number;
}

/** The agent a call names: one picked by sip or number (admin; agents only themselves), else the caller's own agent. */
async function namedAgent(ctx: Context, user: AuthUser, svcId: number, agentSip?: string, agentNumber?: string): Promise<number | null> {
  if (agentSip !== undefined || agentNumber !== undefined) return (await targetAgent(ctx, user, svcId, { agentSip, agentNumber })).agentId;
  return !user.admin && user.agentId !== null ? user.agentId : null;
}

/**
 * What `POST /calls` places for these credentials (CONTRACT section 5): a named agent (admin names one;
 * agent credentials name themselves) is dialled first unless agent-dial-first says otherwise, and must
 * be free (409). click2call places the very same call.
 */
export async function outboundRequest(ctx: Context, user: AuthUser, p: OutboundParams): Promise<PlaceCall> {
  const svcId = scopeService(user, p.serviceId, 'service-id');
  const namedAgentId = await namedAgent(ctx, user, svcId, p.agentSip, p.agentNumber);
  if (namedAgentId !== null) await freeTarget(ctx, svcId, namedAgentId, 'agent');
  return {
    svcId,
    number: p.number,
    origin: 'api',
    namedAgentId,
    agentFirst: p.agentDialFirst ?? namedAgentId !== null,
    recording: p.recording ?? true,
    msgToAgent: p.msgToAgent,
    countryCode: p.countryCode ?? '',
    skillId: p.skillId ?? null,
    userId: user.id,
  };
}

/** A command on an existing call the user may act on; answers after the read models show it. */
async function callCommand(ctx: Context, user: AuthUser, xnid: string, command: CallCommand) {
  await callFor(ctx, user, xnid);
  const r = await handleCommand(ctx.events, streams.call(xnid), callDecider, command);
  await ctx.sync.waitFor(r.position);
}

/** The acting agent named by `agent-id`: agent credentials may name only themselves. */
function actingAgent(user: AuthUser, agentId: number) {
  if (!user.admin && user.agentId !== agentId) throw forbidden('agent credentials may act on their own agent only');
}

async function freeTarget(ctx: Context, svcId: number, agentId: number, name: string) {
  const agent = await getAgent(ctx, svcId, agentId);
  if (!agent) throw notFound(`${name}: no agent ${agentId} in service ${svcId}`);
  if (!isFree(agent, ctx.now())) throw conflict(`agent ${agentId} is busy`);
  return agent;
}

export const callRoutes: RouteRegistrar = (app, ctx) => {
  defineRoute(app, ctx, {
    method: 'POST',
    url: '/api/v1/calls',
    summary: 'Place a call (or schedule one with schedule-time)',
    tags: ['calls'],
    auth: 'user',
    response: json(obj({ id: uuid }), 'the call id; a scheduled call (schedule-time) answers text/plain Success instead'),
    params: {
      number: { type: 'phone', required: true },
      'service-id': { type: 'integer', min: 1 },
      'app-id': { type: 'string', maxLength: 100 },
      'agent-sip': { type: 'string', maxLength: 100 },
      'agent-number': { type: 'phone' },
      'country-code': { type: 'integer', min: 0, max: 9999 },
      'agent-dial-first': { type: 'boolean' },
      recording: { type: 'boolean' },
      'msg-to-agent': { type: 'string', maxLength: 1000 },
      'schedule-time': { type: 'epoch' },
      'max-tries': { type: 'integer', min: 1, max: 10 },
      'skill-id': { type: 'integer', min: 1 },
    },
    handler: async ({ p, user }) => {
      if (p['schedule-time'] !== undefined) {
        const svcId = scopeService(user, p['service-id'], 'service-id');
        const namedAgentId = await namedAgent(ctx, user, svcId, p['agent-sip'], p['agent-number']);
        if (p['skill-id'] !== undefined) {
          const service = await ctx.reads.get<ServiceDoc>('services', String(svcId));
          if (!service?.skills.some((k) => k.id === p['skill-id'])) throw invalid(`skill-id ${p['skill-id']} is not a skill of service ${svcId}`);
        }
        // CONTRACT section 15: a scheduled call to a dnd or blocked number is refused when requested.
        const dnc = await doNotCall(ctx, svcId, p.number);
        if (dnc) throw conflict(`${doNotCallMessage(p.number, dnc)}: a call to it cannot be scheduled`);
        const id = randomUUID();
        const r = await handleCommand(ctx.events, streams.schedule(id), scheduleDecider, {
          type: 'Schedule',
          data: {
            id,
            svcId,
            number: p.number,
            runAt: p['schedule-time'],
            maxTries: p['max-tries'] ?? 1,
            skillId: p['skill-id'] ?? null,
            namedAgentId,
            countryCode: p['country-code'] === undefined ? '' : String(p['country-code']),
            userId: user.id,
            time: ctx.now(),
          },
        });
        await ctx.sync.waitFor(r.position);
        return text('Success');
      }
      const request = await outboundRequest(ctx, user, {
        number: p.number,
        serviceId: p['service-id'],
        agentSip: p['agent-sip'],
        agentNumber: p['agent-number'],
        agentDialFirst: p['agent-dial-first'],
        recording: p.recording,
        msgToAgent: p['msg-to-agent'],
        countryCode: p['country-code'] === undefined ? undefined : String(p['country-code']),
        skillId: p['skill-id'],
      });
      const { xnid, position } = await placeOutboundCall(ctx, request);
      await ctx.sync.waitFor(position);
      return { id: xnid };
    },
  });

  defineRoute(app, ctx, {
    method: 'POST',
    url: '/api/v1/calls/:callTxnId',
    summary: 'Send a signal to a call (signal=hangup)',
    tags: ['calls'],
    auth: 'user',
    response: TRUE,
    pathParams: { callTxnId: { type: 'string', required: true, maxLength: 64 } },
    params: { signal: { type: 'string', required: true, enum: ['hangup'] } },
    handler: async ({ req, user }) => {
      const xnid = ((req.params as { callTxnId: string }).callTxnId).toLowerCase();
      // Any id that names no call, well-formed or not, is an unknown call.
      if (!UUID_RE.test(xnid)) throw notFound(`call ${xnid} not found`);
      await callCommand(ctx, user, xnid, { type: 'RequestHangup', userId: user.id, time: ctx.now() });
      return true;
    },
  });

  defineRoute(app, ctx, {
    method: 'POST',
    url: '/api/v1/hangup',
    summary: 'Hang up a call',
    tags: ['calls'],
    auth: 'user',
    response: TRUE,
    params: { xnid: { type: 'uuid', required: true } },
    handler: async ({ p, user }) => {
      await callCommand(ctx, user, p.xnid, { type: 'RequestHangup', userId: user.id, time: ctx.now() });
      return true;
    },
  });

  defineRoute(app, ctx, {
    method: 'POST',
    url: '/api/v1/transfer',
    summary: 'Transfer a call to another agent (BLIND or ATTENDED)',
    tags: ['calls'],
    auth: 'user',
    response: TRUE,
    params: {
      'agent-id': { type: 'integer', required: true, min: 1 },
      type: { type: 'string', required: true, maxLength: 10 },
      'call-id': { type: 'uuid', required: true },
      'to-agent-id': { type: 'integer', required: true, min: 1 },
    },
    handler: async ({ p, user }) => {
      const mode = p.type.toUpperCase();
      if (mode !== 'BLIND' && mode !== 'ATTENDED') throw invalid('type must be BLIND or ATTENDED');
      actingAgent(user, p['agent-id']);
      const call = await callFor(ctx, user, p['call-id']);
      if (p['to-agent-id'] === p['agent-id']) throw invalid('to-agent-id must be another agent');
      await freeTarget(ctx, call.svcId, p['to-agent-id'], 'to-agent-id');
      await callCommand(ctx, user, call.xnid, { type: 'RequestTransfer', fromAgentId: p['agent-id'], toAgentId: p['to-agent-id'], mode, time: ctx.now() });
      return true;
    },
  });

  defineRoute(app, ctx, {
    method: 'POST',
    url: '/api/v1/add-call',
    summary: 'Add another agent to a call',
    tags: ['calls'],
    auth: 'user',
    response: json(actionResult),
    params: {
      xnid: { type: 'uuid', required: true },
      toagentid: { type: 'integer', required: true, min: 1 },
      'agent-id': { type: 'integer', required: true, min: 1 },
    },
    handler: async ({ p, user }) => {
      actingAgent(user, p['agent-id']);
      const call = await callFor(ctx, user, p.xnid);
      await findAgent(ctx, call.svcId, { agentId: p['agent-id'] });
      await freeTarget(ctx, call.svcId, p.toagentid, 'toagentid');
      await callCommand(ctx, user, call.xnid, { type: 'RequestAddLeg', byAgentId: p['agent-id'], toAgentId: p.toagentid, time: ctx.now() });
      return { isError: false, callTxnId: call.xnid };
    },
  });

  defineRoute(app, ctx, {
    method: 'POST',
    url: '/api/v1/whisper-spy',
    summary: 'Listen to (spy) or coach (whisper) a call from a phone number',
    tags: ['calls'],
    auth: 'user',
    response: json(actionResult),
    params: {
      xnid: { type: 'uuid', required: true },
      'country-code': { type: 'integer', required: true, min: 0, max: 9999 },
      type: { type: 'string', required: true, maxLength: 10, description: 'spy or whisper' },
      number: { type: 'phone', required: true },
    },
    handler: async ({ p, user }) => {
      const mode = p.type.toLowerCase();
      if (mode !== 'spy' && mode !== 'whisper') throw invalid('type must be spy or whisper');
      await callCommand(ctx, user, p.xnid, { type: 'RequestMonitor', number: p.number, mode, time: ctx.now() });
      return { isError: false, callTxnId: p.xnid };
    },
  });
};
