/**
 * The credential policy for placing calls, shared by `POST /calls` (and its schedule-time form) and
 * click2call (CONTRACT sections 4 and 5): which service the credentials act on, which agent they may
 * name. What follows (the checks, the event) is the command in src/commands/call/place.ts.
 */
import type { Context } from '../context.js';
import type { AuthUser } from '../domain/auth-user.js';
import { freeAgent, type PlaceCall } from '../commands/call/place.js';
import { targetAgent } from '../queries/agents.js';
import { scopeService } from './scope.js';

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
export async function namedAgent(ctx: Context, user: AuthUser, svcId: number, agentSip?: string, agentNumber?: string): Promise<number | null> {
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
  if (namedAgentId !== null) await freeAgent(ctx, svcId, namedAgentId, 'agent');
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
