/** Reading agents: the agent record of the spec, lookups by number or SIP, and the scope rules of CONTRACT section 4. */
import type { Context } from '../context.js';
import type { AuthUser } from '../domain/auth-user.js';
import { forbidden, invalid, notFound } from '../domain/errors.js';
import { isFree } from '../commands/agent/agent.js';
import { agentKey, type AgentDoc } from '../projections/agents.js';
import { RawJson, jsonArray, jsonArrayOnce, jsonOf } from './json.js';
import { answerCache } from './answer-cache.js';

export function agentRecord(a: AgentDoc) {
  return {
    id: a.agentId,
    number: a.number,
    number1: null,
    name: a.name,
    status: a.status,
    sip: a.sip,
    time: a.time,
    active: true,
    country_code: a.countryCode,
    svc_id: a.svcId,
    user_id: a.userId ?? 0,
    call_txn_id: a.recentCalls.join(','),
    bind_count: 0,
    customer_bound_trunk: null,
  };
}

const recordJson = new WeakMap<AgentDoc, string>();
/** JSON.stringify(agentRecord(a)), once per document. */
export const agentRecordJson = (a: AgentDoc) => jsonOf(recordJson, a, agentRecord);
/** The JSON answer of a list of agent records. */
export const agentRecordsJson = (agents: AgentDoc[]) => new RawJson(agentRecordsArray(agents));
/** The JSON array of the agents' records (the last one per service reused while unchanged). */
export const agentRecordsArray = (agents: AgentDoc[]) => jsonArrayOnce(`records|${agents[0]?.svcId}`, agents.map(agentRecordJson));

/** GET /agents reads only the agents model: a write to it voids a kept answer. */
const AGENT_READS = ['agents'] as const;
const agentsKey = (user: AuthUser, svcId: number) => `agents|${svcId}|${user.admin ? 'all' : user.agentId}`;

/** GET /agents as last computed for this caller, while the agents model is unwritten since (see answer-cache.ts). */
export function agentListCached(ctx: Context, user: AuthUser, svcId: number): RawJson | undefined {
  return answerCache(ctx.reads)?.get<RawJson>(agentsKey(user, svcId), AGENT_READS);
}

/** GET /agents: admins get every agent of the service, agent credentials their own record (or none). */
export async function agentList(ctx: Context, user: AuthUser, svcId: number): Promise<RawJson> {
  const cache = answerCache(ctx.reads);
  const stamp = cache?.stamp(AGENT_READS) ?? 0;
  let answer: RawJson;
  if (user.admin) answer = agentRecordsJson(await serviceAgents(ctx, svcId));
  else {
    const own = user.agentId === null ? null : await getAgent(ctx, svcId, user.agentId);
    answer = new RawJson(jsonArray(own ? [agentRecordJson(own)] : []));
  }
  cache?.set(agentsKey(user, svcId), stamp, answer);
  return answer;
}

/** The service's provisioned agents, by id. */
export async function serviceAgents(ctx: Context, svcId: number): Promise<AgentDoc[]> {
  const docs = await ctx.reads.find<AgentDoc>('agents', { svcId, exists: true });
  return docs.sort((a, b) => a.agentId - b.agentId);
}

export async function getAgent(ctx: Context, svcId: number, agentId: number): Promise<AgentDoc | null> {
  const doc = await ctx.reads.get<AgentDoc>('agents', agentKey(svcId, agentId));
  return doc?.exists ? doc : null;
}

/** Free agents, the one free longest first (ties by id). */
export async function freeAgents(ctx: Context, svcId: number): Promise<AgentDoc[]> {
  const now = ctx.now();
  return (await serviceAgents(ctx, svcId))
    .filter((a) => isFree(a, now))
    .sort((a, b) => a.freeSince - b.freeSince || a.agentId - b.agentId);
}

export interface AgentSelector {
  agentNumber?: string;
  agentSip?: string;
  agentId?: number;
}

/**
 * The agent a request acts on. Admins pick one by id, number or SIP (or act on their own agent);
 * agent credentials act on their own agent only, and naming another is 403.
 */
export async function targetAgent(ctx: Context, user: AuthUser, svcId: number, sel: AgentSelector): Promise<AgentDoc> {
  const named = sel.agentId !== undefined || sel.agentNumber !== undefined || sel.agentSip !== undefined;
  if (!user.admin) {
    if (user.agentId === null) throw forbidden('these credentials belong to no agent');
    const own = await getAgent(ctx, svcId, user.agentId);
    if (!own) throw notFound(`agent ${user.agentId} not found in service ${svcId}`);
    if (
      (sel.agentId !== undefined && sel.agentId !== own.agentId) ||
      (sel.agentNumber !== undefined && sel.agentNumber !== own.number) ||
      (sel.agentSip !== undefined && sel.agentSip !== own.sip)
    ) {
      throw forbidden('agent credentials may act on their own agent only');
    }
    return own;
  }
  if (!named) {
    if (user.agentId !== null) {
      const own = await getAgent(ctx, svcId, user.agentId);
      if (own) return own;
    }
    throw invalid('agent-number is required with admin credentials');
  }
  return findAgent(ctx, svcId, sel);
}

/** An agent of the service by id, number or SIP; 404 when none matches. */
export async function findAgent(ctx: Context, svcId: number, sel: AgentSelector): Promise<AgentDoc> {
  let doc: AgentDoc | null | undefined;
  let what: string;
  if (sel.agentId !== undefined) {
    what = `id ${sel.agentId}`;
    doc = await getAgent(ctx, svcId, sel.agentId);
  } else if (sel.agentNumber !== undefined) {
    what = `number ${sel.agentNumber}`;
    doc = (await ctx.reads.find<AgentDoc>('agents', { svcId, exists: true, number: sel.agentNumber }, { limit: 1 }))[0];
  } else {
    what = `sip ${sel.agentSip}`;
    doc = (await ctx.reads.find<AgentDoc>('agents', { svcId, exists: true, sip: sel.agentSip ?? '' }, { limit: 1 }))[0];
  }
  if (!doc) throw notFound(`no agent with ${what} in service ${svcId}`);
  return doc;
}
