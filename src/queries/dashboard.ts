/** The dashboard object of the spec, from the agents, services and call read models. */
import type { Context } from '../context.js';
import type { AuthUser } from '../domain/auth-user.js';
import type { ServiceDoc } from '../projections/services.js';
import { dashboardStatus, isFree } from '../commands/agent/agent.js';
import { dayOf } from '../domain/time.js';
import { notFound } from '../domain/errors.js';
import { agentRecordJson, agentRecordsArray, serviceAgents } from './agents.js';
import { RawJson, jsonArray, jsonArrayOnce, slot, stringifyWith } from './json.js';
import { answerCache } from './answer-cache.js';
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

/** The read models a dashboard is computed from: a write to any of them voids a kept answer. */
const DASHBOARD_READS = ['services', 'agents', 'call-stats', 'in-ivr', 'queued-callers'] as const;

/** A kept dashboard, with what the clock can change: the day of its call counts, and the next status change. */
interface KeptDashboard {
  answer: RawJson;
  timezone: string;
  day: string;
  /** When it was computed: a clock set back before it is not trusted with it. */
  at: number;
  /** The first instant an agent leaves wrap-up (its status and the free count change then). */
  until: number;
}

// The caller's name, role and own agent are in the answer: one per caller of the service.
const dashboardKey = (user: AuthUser, svcId: number) => `dashboard|${svcId}|${user.admin ? 1 : 0}|${user.agentId}|${user.username}`;

/**
 * The dashboard as last computed, when no read model it came from has been written since and the
 * clock has not moved it (a wrap-up ended, a new day): undefined when it must be computed.
 */
export function dashboardCached(ctx: Context, user: AuthUser, svcId: number): RawJson | undefined {
  const kept = answerCache(ctx.reads)?.get<KeptDashboard>(dashboardKey(user, svcId), DASHBOARD_READS);
  if (kept === undefined) return undefined;
  const now = ctx.now();
  return now >= kept.at && now < kept.until && dayOf(now, kept.timezone) === kept.day ? kept.answer : undefined;
}

/** The dashboard answer, serialized (agent entries from their cached JSON), and kept (see `dashboardCached`). */
export async function dashboard(ctx: Context, user: AuthUser, svcId: number): Promise<RawJson> {
  const cache = answerCache(ctx.reads);
  // Before any read: a write landing while this answer is computed leaves it kept as stale.
  const stamp = cache?.stamp(DASHBOARD_READS) ?? 0;
  const service = await ctx.reads.get<ServiceDoc>('services', String(svcId));
  if (!service) throw notFound(`service ${svcId} not found`);
  const now = ctx.now();
  const all = await serviceAgents(ctx, svcId);
  // Agent credentials see their own agent; the counts are the service's.
  const visible = user.admin ? all : all.filter((a) => a.agentId === user.agentId);
  const day = dayOf(now, service.timezone);
  const stats = await ctx.reads.get<CallStatsDoc>('call-stats', callStatsKey(svcId, day));
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
  const answer = new RawJson(stringifyWith(body, [agents, agentsData]));
  if (cache) {
    let until = Infinity;
    for (const a of all) if (a.freeSince > now && a.freeSince < until) until = a.freeSince;
    cache.set(dashboardKey(user, svcId), stamp, { answer, timezone: service.timezone, day, at: now, until } satisfies KeptDashboard);
  }
  return answer;
}
