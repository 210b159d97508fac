/** The dashboard object of the spec, from the agents, services and call read models. */
import type { Context } from '../context.js';
import type { AuthUser } from '../domain/auth-user.js';
import type { ServiceDoc } from '../projections/services.js';
import { dashboardStatus, isFree } from '../commands/agent/agent.js';
import { dayOf } from '../domain/time.js';
import { notFound } from '../domain/errors.js';
import { agentRecordJson, agentRecordsArray, serviceAgents } from './agents.js';
import { RawJson, jsonArray, jsonArrayOnce, slot, stringifyWith } from './json.js';
import type { AgentDoc } from '../projections/agents.js';
import { callStatsKey, type CallStatsDoc, type QueuedCallerDoc } from '../projections/calls.js';

/**
 * Per agent document, its agentsData entry as JSON: the part before the status (which moves with the
 * clock) and the whole entry for the last status seen (the same string while the status holds).
 */
const agentData = new WeakMap<AgentDoc, { head: string; status: string; json: string }>();

function agentDataJson(a: AgentDoc, now: number): string {
  const status = dashboardStatus(a, now);
  let e = agentData.get(a);
  if (e === undefined) {
    const skills = a.skills.map((k) => ({ id: a.agentId * 1000 + k.skillId, agent_id: a.agentId, skill_id: k.skillId, skill_level: k.level }));
    const head = JSON.stringify({ skills, number: a.number, name: a.name, id: a.agentId, sip: a.sip, status: null }).slice(0, -'null}'.length);
    e = { head, status: '', json: '' };
    agentData.set(a, e);
  }
  if (e.json === '' || e.status !== status) {
    e.status = status;
    e.json = `${e.head}${JSON.stringify(status)}}`;
  }
  return e.json;
}

/** The dashboard answer, serialized (agent entries from their cached JSON). */
export async function dashboard(ctx: Context, user: AuthUser, svcId: number): Promise<RawJson> {
  const service = await ctx.reads.get<ServiceDoc>('services', String(svcId));
  if (!service) throw notFound(`service ${svcId} not found`);
  const now = ctx.now();
  const all = await serviceAgents(ctx, svcId);
  // Agent credentials see their own agent; the counts are the service's.
  const visible = user.admin ? all : all.filter((a) => a.agentId === user.agentId);
  const stats = await ctx.reads.get<CallStatsDoc>('call-stats', callStatsKey(svcId, dayOf(now, service.timezone)));
  const inIvr = (await ctx.reads.find('in-ivr', { svcId })).length;
  const waiting = await ctx.reads.find<QueuedCallerDoc>('queued-callers', { svcId }, { orderBy: { field: 'since' } });
  const data: Record<string, { number: string; xnid: string; since: number }[]> = {};
  for (const w of waiting) (data[String(w.queueId)] ??= []).push({ number: w.number, xnid: w.xnid, since: w.since });
  const body = {
    isSupervisor: user.admin,
    userName: user.username,
    serviceName: service.name,
    svcId,
    agents: slot(0),
    svcSkills: service.skills.map((s, index) => ({ id: s.id, name: s.name, index, svc_id: svcId })),
    dids: service.dids,
    agentsData: slot(1),
    callStats: {
      totalCalls: stats?.totalCalls ?? 0,
      inIvr,
      ibCalls: stats?.ibCalls ?? 0,
      obCalls: stats?.obCalls ?? 0,
    },
    customersInQueue: { data, dataCount: String(waiting.length) },
    agentStats: {
      freeAgents: all.filter((a) => isFree(a, now)).length,
      busyAgents: all.filter((a) => a.call !== null).length,
    },
  };
  const who = user.admin ? 'all' : `agent ${user.agentId}`;
  const agents = user.admin ? agentRecordsArray(visible) : jsonArray(visible.map(agentRecordJson));
  const agentsData = jsonArrayOnce(`agentsData|${svcId}|${who}`, visible.map((a) => agentDataJson(a, now)));
  return new RawJson(stringifyWith(body, [agents, agentsData]));
}
