/**
 * Event subscribers: POST/PATCH/GET /api/v1/subscriber (spec "Subscriber record", CONTRACT 7, 11).
 *
 * Identity is (svc-id, agent-id); agent-id absent or 0 means service-wide. Scope:
 * - svc-id must be one of the credentials' services (403);
 * - agent credentials (a user with an agent and without admin) manage only their own agent's
 *   subscriber: any other agent-id, or none (service-wide), is 403; their GET lists only it;
 * - agent-id > 0 must be an agent provisioned for the service (404 otherwise), checked on its
 *   `agent-<svcId>-<agentId>` stream, which provisioning starts with `AgentProvisioned`.
 * Writes wait for the read models, so a GET right after the answer sees them.
 */
import type { RouteRegistrar } from '../route.js';
import { defineRoute } from '../route.js';
import { TRUE, json, arrayOf, subscriberRecord } from '../answers.js';
import { scopeService } from '../scope.js';
import type { AuthUser } from '../../domain/auth-user.js';
import type { Context } from '../../context.js';
import { DEFAULT_EVENT_MASK, SUBSCRIBER_CHANNEL_TYPES, parseEventMask } from '../../commands/subscriber/subscriber.js';
import { runSubscriberCommand } from '../../commands/subscriber/run.js';
import { streams } from '../../domain/streams.js';
import { forbidden, invalid, notFound } from '../../domain/errors.js';
import type { SubscriberDoc } from '../../projections/subscribers.js';
import { subscribersOf } from '../../queries/subscribers.js';

const MASK_HELP = 'up to six digits of 0 and 1 (CustomerRing, CustomerUp, CustomerHangup, AgentRing, AgentUp, AgentHangup; shorter ones are left-padded with 0)';

const isAgentOnly = (user: AuthUser) => user.agentId !== null && !user.admin;

/** Agent credentials may name only their own agent (CONTRACT section 4). */
function checkAgentScope(user: AuthUser, agentId: number): void {
  if (isAgentOnly(user) && agentId !== user.agentId) {
    throw forbidden(
      agentId === 0
        ? `agent credentials manage only their own agent's subscriber: give agent-id=${user.agentId}`
        : `agent ${agentId} is not the agent of these credentials`,
    );
  }
}

function eventMask(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const mask = parseEventMask(raw);
  if (!mask) throw invalid(`event-mask must be ${MASK_HELP}`);
  return mask;
}

async function assertAgentOfService(ctx: Context, svcId: number, agentId: number): Promise<void> {
  const first = await ctx.events.readStream(streams.agent(svcId, agentId), { maxCount: 1 });
  if (first[0]?.type !== 'AgentProvisioned') throw notFound(`agent ${agentId} is not an agent of service ${svcId}`);
}

function httpUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw invalid('url must be an absolute http or https URL');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw invalid('url must be an http or https URL');
  return raw;
}

export const subscriberRoutes: RouteRegistrar = (app, ctx) => {
  defineRoute(app, ctx, {
    method: 'POST',
    url: '/api/v1/subscriber',
    summary: 'Register an event subscriber for a service or one of its agents',
    tags: ['subscribers'],
    auth: 'user',
    response: TRUE,
    params: {
      'svc-id': { type: 'integer', required: true, min: 1 },
      'auth-key': { type: 'string', required: true, maxLength: 1000, description: 'signs deliveries: the base64 part of a whsec_ key, else the key bytes' },
      force: { type: 'boolean', required: true, description: 'replace an existing subscriber of the same (svc-id, agent-id)' },
      'channel-type': { type: 'string', required: true, maxLength: 50, description: `one of ${SUBSCRIBER_CHANNEL_TYPES.join(', ')}` },
      url: { type: 'string', required: true, maxLength: 2048, description: 'http(s) URL receiving the events by POST' },
      'is-registered': { type: 'boolean', required: true, description: 'false pauses delivery' },
      'device-id': { type: 'string', required: true, maxLength: 256 },
      'event-mask': { type: 'string', maxLength: 16, description: `integer or digit string: ${MASK_HELP}; default 111111` },
      'custom-event': { type: 'string', maxLength: 1000 },
      'agent-id': { type: 'integer', min: 0, description: 'the agent whose events are delivered; absent or 0: the whole service' },
    },
    handler: async ({ p, user }) => {
      const svcId = scopeService(user, p['svc-id'], 'svc-id', true);
      const agentId = p['agent-id'] ?? 0;
      checkAgentScope(user, agentId);
      const channelType = p['channel-type'].trim().toLowerCase();
      if (!(SUBSCRIBER_CHANNEL_TYPES as readonly string[]).includes(channelType)) {
        throw invalid(`channel-type "${p['channel-type']}" is not supported; supported: ${SUBSCRIBER_CHANNEL_TYPES.join(', ')}`);
      }
      const url = httpUrl(p.url.trim());
      const mask = eventMask(p['event-mask']) ?? DEFAULT_EVENT_MASK;
      if (agentId > 0) await assertAgentOfService(ctx, svcId, agentId);
      await runSubscriberCommand(ctx, {
        type: 'RegisterSubscriber',
        svcId,
        agentId,
        url,
        authKey: p['auth-key'],
        deviceId: p['device-id'],
        channelType,
        eventMask: mask,
        customEvent: p['custom-event'] ?? null,
        isRegistered: p['is-registered'],
        force: p.force,
        time: ctx.now(),
      });
      return true;
    },
  });

  defineRoute(app, ctx, {
    method: 'PATCH',
    url: '/api/v1/subscriber',
    summary: "Pause/resume a subscriber (is-registered) or change its event mask (both may be given)",
    tags: ['subscribers'],
    auth: 'user',
    response: TRUE,
    params: {
      'svc-id': { type: 'integer', required: true, min: 1 },
      'agent-id': { type: 'integer', required: true, min: 0, description: '0: the service-wide subscriber' },
      'is-registered': { type: 'boolean' },
      'event-mask': { type: 'string', maxLength: 16, description: `integer or digit string: ${MASK_HELP}` },
    },
    handler: async ({ p, user }) => {
      const svcId = scopeService(user, p['svc-id'], 'svc-id', true);
      const agentId = p['agent-id'];
      checkAgentScope(user, agentId);
      const mask = eventMask(p['event-mask']);
      if (p['is-registered'] === undefined && mask === undefined) throw invalid('is-registered or event-mask is required');
      await runSubscriberCommand(ctx, {
        type: 'UpdateSubscriber',
        svcId,
        agentId,
        isRegistered: p['is-registered'],
        eventMask: mask,
        time: ctx.now(),
      });
      return true;
    },
  });

  defineRoute(app, ctx, {
    method: 'GET',
    url: '/api/v1/subscriber',
    summary: "Subscribers of a service (svc-id), of one agent (agent-id), or of all the credentials' services",
    tags: ['subscribers'],
    auth: 'user',
    response: json(arrayOf(subscriberRecord)),
    params: {
      'svc-id': { type: 'integer', min: 1, description: "absent: every service of the credentials" },
      'agent-id': { type: 'integer', min: 0, description: '0: the service-wide subscriber only' },
    },
    handler: async ({ p, user }) => {
      const services = p['svc-id'] === undefined ? user.services : [scopeService(user, p['svc-id'])];
      let agentId = p['agent-id'];
      if (isAgentOnly(user)) {
        if (agentId !== undefined) checkAgentScope(user, agentId);
        agentId = user.agentId!;
      }
      const out: SubscriberDoc[] = [];
      for (const svcId of [...services].sort((a, b) => a - b)) {
        const docs = await subscribersOf(ctx, svcId, agentId);
        out.push(...docs);
      }
      return out;
    },
  });
};
