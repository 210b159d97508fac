/** Calls: placing them and the control signals (hangup, transfer, add-call, whisper-spy). */
import type { RouteRegistrar } from '../route.js';
import { defineRoute, text } from '../route.js';
import { TRUE, json, obj, uuid, actionResult } from '../answers.js';
import { randomUUID } from 'node:crypto';
import { scheduleCall } from '../../commands/schedule/schedule-call.js';
import { scopeService } from '../scope.js';
import { namedAgent, outboundRequest } from '../call-request.js';
import type { Context } from '../../context.js';
import type { AuthUser } from '../../domain/auth-user.js';
import type { CallCommand } from '../../commands/call/call.js';
import { runCallCommand } from '../../commands/call/run.js';
import { freeAgent, placeOutboundCall, startedAt } from '../../commands/call/place.js';
import { idFromKey } from '../idempotency.js';
import { forbidden, invalid, notFound } from '../../domain/errors.js';
import { findAgent } from '../../queries/agents.js';
import { callFor } from '../../queries/calls.js';
import { needsMedia } from '../media-features.js';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A command on an existing call the user may act on (callFor authorises); answers after the read models show it. */
async function callCommand(ctx: Context, user: AuthUser, xnid: string, command: CallCommand) {
  await callFor(ctx, user, xnid);
  await runCallCommand(ctx, xnid, command);
}

/** The acting agent named by `agent-id`: agent credentials may name only themselves. */
function actingAgent(user: AuthUser, agentId: number) {
  if (!user.admin && user.agentId !== agentId) throw forbidden('agent credentials may act on their own agent only');
}

export const callRoutes: RouteRegistrar = (app, ctx) => {
  defineRoute(app, ctx, {
    method: 'POST',
    url: '/api/v1/calls',
    summary: 'Place a call (or schedule one with schedule-time)',
    tags: ['calls'],
    auth: 'user',
    response: {
      description: 'the call id; a scheduled call (schedule-time) answers text/plain Success instead',
      content: { 'application/json': obj({ id: uuid }), 'text/plain': { type: 'string', enum: ['Success'] } },
    },
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
    handler: async ({ p, user, idempotency }) => {
      if (p['schedule-time'] !== undefined) {
        const svcId = scopeService(user, p['service-id'], 'service-id');
        const namedAgentId = await namedAgent(ctx, user, svcId, p['agent-sip'], p['agent-number']);
        // A retried request (same Idempotency-Key) names the same schedule: it is not scheduled twice.
        const id = idempotency ? idFromKey(idempotency, 'schedule') : randomUUID();
        await scheduleCall(ctx, {
          id,
          svcId,
          number: p.number,
          runAt: p['schedule-time'],
          maxTries: p['max-tries'] ?? 1,
          skillId: p['skill-id'] ?? null,
          namedAgentId,
          countryCode: p['country-code'] === undefined ? '' : String(p['country-code']),
          userId: user.id,
        });
        return text('Success');
      }
      // A retried request (same Idempotency-Key) names the same call: if the first run placed it
      // before its process died, the retry answers it rather than ringing the customer again.
      const xnid = idempotency ? idFromKey(idempotency, 'call') : undefined;
      const placed = xnid === undefined ? null : await startedAt(ctx, xnid);
      if (placed !== null) {
        await ctx.sync.waitFor(placed);
        return { id: xnid };
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
      const placedNow = await placeOutboundCall(ctx, { ...request, xnid });
      await ctx.sync.waitFor(placedNow.position);
      return { id: placedNow.xnid };
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
      await freeAgent(ctx, call.svcId, p['to-agent-id'], 'to-agent-id');
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
      needsMedia(ctx, 'adding a leg (add-call)');
      actingAgent(user, p['agent-id']);
      const call = await callFor(ctx, user, p.xnid);
      await findAgent(ctx, call.svcId, { agentId: p['agent-id'] });
      await freeAgent(ctx, call.svcId, p.toagentid, 'toagentid');
      await callCommand(ctx, user, call.xnid, { type: 'RequestAddLeg', byAgentId: p['agent-id'], toAgentId: p.toagentid, time: ctx.now() });
      return { isError: false, callTxnId: call.xnid };
    },
  });

  defineRoute(app, ctx, {
    method: 'POST',
    url: '/api/v1/whisper-spy',
    summary: 'Listen to (spy), coach (whisper) or join (barge) a call from a phone number',
    tags: ['calls'],
    auth: 'user',
    response: json(actionResult),
    params: {
      xnid: { type: 'uuid', required: true },
      'country-code': { type: 'integer', required: true, min: 0, max: 9999 },
      type: { type: 'string', required: true, maxLength: 10, description: 'spy, whisper or barge' },
      number: { type: 'phone', required: true },
    },
    handler: async ({ p, user }) => {
      // Every type of this route (spy, whisper, barge) needs media mixing.
      needsMedia(ctx, `${p.type.toLowerCase()} (whisper-spy)`);
      const mode = p.type.toLowerCase();
      if (mode !== 'spy' && mode !== 'whisper' && mode !== 'barge') throw invalid('type must be spy, whisper or barge');
      await callCommand(ctx, user, p.xnid, { type: 'RequestMonitor', number: p.number, mode, time: ctx.now() });
      return { isError: false, callTxnId: p.xnid };
    },
  });
};
