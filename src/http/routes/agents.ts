/** Agents: GET/PATCH /api/v1/agents, GET /api/v1/agents-free, POST /api/v1/dialer-agent-wrapup (CONTRACT sections 4, 6, 11). */
import type { RouteRegistrar } from '../route.js';
import { defineRoute, text } from '../route.js';
import { SUCCESS, json, obj, arrayOf, int, str, agentRecordSchema } from '../answers.js';
import { scopeService } from '../scope.js';
import { runAgentCommand } from '../../commands/agent/run.js';
import { conflict, invalid } from '../../domain/errors.js';
import { PHONE_RE } from '../../domain/phone.js';
import { agentsAsOf, pastInstant } from '../../analytics/queries.js';
import { agentList, agentListCached, findAgent, freeAgents, targetAgent } from '../../queries/agents.js';

export const agentRoutes: RouteRegistrar = (app, ctx) => {
  defineRoute(app, ctx, {
    method: 'GET',
    url: '/api/v1/agents',
    summary: "The service's agents (admin) or the caller's own agent record",
    tags: ['agents'],
    auth: 'user',
    response: json(arrayOf(agentRecordSchema), 'agent records'),
    params: {
      'svc-id': { type: 'integer', min: 1 },
      at: { type: 'epoch', description: 'epoch ms: answer as the agents stood at that instant (CONTRACT section 12)' },
    },
    // Not async: a kept answer goes out in the same turn (src/queries/answer-cache.ts).
    handler: ({ p, user }) => {
      const svcId = scopeService(user, p['svc-id']);
      if (p.at !== undefined) {
        const at = pastInstant(ctx, p.at);
        return ctx.analytics.caughtUp().then(() => agentsAsOf(ctx, user, svcId, at));
      }
      return agentListCached(ctx, user, svcId) ?? agentList(ctx, user, svcId);
    },
  });

  defineRoute(app, ctx, {
    method: 'PATCH',
    url: '/api/v1/agents',
    summary: 'Login, logout, break, change number or change name of an agent',
    tags: ['agents'],
    auth: 'user',
    response: json(obj({ status: int, break: int, name: str, number: str }), 'the changed fields: status and break, name, or number'),
    params: {
      status: { type: 'integer', description: '0 login, 2 logout' },
      break: { type: 'integer', description: 'break code 0-7' },
      name: { type: 'string', maxLength: 100 },
      // Checked only in the change-number form: beside `name` a `number` is ignored (CONTRACT section 11).
      number: { type: 'string', maxLength: 100, description: 'new number of the agent (6 to 15 digits, an optional leading +)' },
      'agent-number': { type: 'phone', description: 'the agent to change (admin credentials)' },
      'agent-sip': { type: 'string', maxLength: 100 },
      'svc-id': { type: 'integer', min: 1 },
    },
    handler: async ({ p, user }) => {
      const svcId = scopeService(user, p['svc-id']);
      // The form is picked by the parameters present, in this order (CONTRACT section 11).
      const stateForm = p.status !== undefined || p.break !== undefined;
      if (!stateForm && p.name === undefined && p.number === undefined) throw invalid('status or break is required');
      if (p.status !== undefined && p.status !== 0 && p.status !== 2) throw invalid('status must be 0 (login) or 2 (logout)');
      if (p.status === undefined && p.break !== undefined && (p.break < 0 || p.break > 7)) throw invalid('break must be a break code from 0 to 7');
      if (!stateForm && p.name !== undefined && p.name.trim() === '') throw invalid('name must not be empty');
      const agent = await targetAgent(ctx, user, svcId, { agentNumber: p['agent-number'], agentSip: p['agent-sip'] });
      const time = ctx.now();
      if (stateForm) {
        const s = await runAgentCommand(ctx, agent, { type: 'SetState', status: p.status, break: p.status === undefined ? p.break : undefined, time });
        return { status: s.status, break: s.breakCode };
      }
      if (p.name !== undefined) {
        const s = await runAgentCommand(ctx, agent, { type: 'ChangeName', name: p.name.trim(), time });
        return { name: s.name };
      }
      const number = p.number!.trim();
      if (!PHONE_RE.test(number)) throw invalid('number must be a phone number of 6 to 15 digits');
      const holder = await findAgent(ctx, svcId, { agentNumber: number }).catch(() => null);
      if (holder && holder.agentId !== agent.agentId) throw conflict(`number ${number} belongs to another agent of service ${svcId}`);
      const s = await runAgentCommand(ctx, agent, { type: 'ChangeNumber', number, time });
      return { number: s.number };
    },
  });

  defineRoute(app, ctx, {
    method: 'GET',
    url: '/api/v1/agents-free',
    summary: 'Free agents of the service, the one free longest first',
    tags: ['agents'],
    auth: 'user',
    response: json(arrayOf(obj({ name: str, id: int })), 'free agents, free longest first'),
    params: { 'svc-id': { type: 'integer', min: 1 } },
    handler: async ({ p, user }) => {
      const svcId = scopeService(user, p['svc-id']);
      return (await freeAgents(ctx, svcId)).map((a) => ({ name: a.name, id: a.agentId }));
    },
  });

  defineRoute(app, ctx, {
    method: 'POST',
    url: '/api/v1/dialer-agent-wrapup',
    summary: "Set an agent's wrap-up seconds after each dialer call",
    tags: ['dialer'],
    auth: 'user',
    response: SUCCESS,
    params: {
      'svc-id': { type: 'integer', required: true, min: 1 },
      'agent-sip': { type: 'string', required: true, maxLength: 100 },
      seconds: { type: 'integer', required: true, min: 0, max: 86_400 },
    },
    handler: async ({ p, user }) => {
      const svcId = scopeService(user, p['svc-id'], 'svc-id', true);
      const agent = await targetAgent(ctx, user, svcId, { agentSip: p['agent-sip'] });
      await runAgentCommand(ctx, agent, { type: 'SetWrapUp', seconds: p.seconds, time: ctx.now() });
      return text('Success');
    },
  });
};
