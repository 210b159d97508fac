/** Answers of CONTRACT section 12: one call's story, the reports, and the dashboard and agents as they were. */
import type { Context } from '../context.js';
import type { AuthUser } from '../domain/auth-user.js';
import type { CallDoc, CallStatsDoc, QueuedCallerDoc } from '../projections/calls.js';
import type { AgentDoc } from '../projections/agents.js';
import type { ServiceDoc } from '../projections/services.js';
import { isLegEvent, toSocketEvent } from '../domain/call-events.js';
import { isEvent } from '../commands/platform-events.js';
import { streams } from '../domain/streams.js';
import { invalid, notFound } from '../domain/errors.js';
import { dayOf } from '../domain/time.js';
import { intervalStarts, type Interval } from '../domain/zone.js';
import { dashboardStatus, isFree } from '../commands/agent/agent.js';
import { callSummary } from '../queries/calls.js';
import { agentRecord, serviceAgents } from '../queries/agents.js';
import { callStatsKey } from '../projections/calls.js';
import { applyTimeline, docOf, docsOf, timelineServices, type TimelineState } from './timeline.js';
import { SNAPSHOT_EVERY } from './model.js';
import type { AnalyticsStore } from './store.js';
import type { EventStore } from '../gateways/event-store/port.js';

const round1 = (n: number) => Math.round(n * 10) / 10;

/** One call: summary, webhook record, agents rung, leg events as the socket sent them. Others' calls are 404 like unknown ones. */
export async function callDetail(ctx: Context, user: AuthUser, xnid: string) {
  const doc = await ctx.reads.get<CallDoc>('calls', xnid.toLowerCase());
  if (!doc || !user.services.includes(doc.svcId)) throw notFound(`call ${xnid} not found`);
  const events = await ctx.events.readStream(streams.call(doc.xnid));
  const agentIds: number[] = [];
  let record = null;
  // The queue the call joined (CONTRACT section 17): the one it waited in, else the one its IVR digits chose.
  let queueId: number | null = null;
  for (const e of events) {
    if (isEvent(e, 'CallStarted')) queueId = e.data.queueId ?? null;
    if (isEvent(e, 'CallQueued') && queueId === null && e.data.queueId > 0) queueId = e.data.queueId;
    if (isEvent(e, 'AgentRing')) {
      const id = e.data.agentId;
      if (id !== null && !agentIds.includes(id)) agentIds.push(id);
    }
    if (isEvent(e, 'CallEnded')) record = e.data.webhook;
  }
  return {
    xnid: doc.xnid,
    svcId: doc.svcId,
    summary: callSummary(ctx, doc),
    record,
    agentIds,
    queueId,
    events: events.filter(isLegEvent).map(toSocketEvent),
  };
}

async function serviceOf(ctx: Context, svcId: number): Promise<ServiceDoc> {
  const service = await ctx.reads.get<ServiceDoc>('services', String(svcId));
  if (!service) throw notFound(`service ${svcId} not found`);
  return service;
}

/** Overlap of [a, b) with [lo, hi). */
const overlap = (a: number, b: number, lo: number, hi: number) => Math.max(0, Math.min(b, hi) - Math.max(a, lo));

/** The agent report: one item per agent of the service, by agent id, over [from, to) widened to whole local days. */
export async function agentReport(ctx: Context, svcId: number, from: number, to: number) {
  const service = await serviceOf(ctx, svcId);
  const days = intervalStarts(from, to, 'day', service.timezone);
  const lo = days[0]!;
  const hi = days[days.length - 1]!;
  const store = ctx.analytics.store;
  const [dayRows, opened] = store.snapshot(() => [store.agentDays(svcId, lo, hi), store.agentOpen(svcId)] as const);
  const rows = new Map(dayRows.map((r) => [r.agentId, r]));
  const now = ctx.now();
  // Logins and breaks still open count up to now.
  const open = new Map(opened.map((o) => [o.agentId, o]));
  return (await serviceAgents(ctx, svcId)).map((a) => {
    const r = rows.get(a.agentId);
    let loginMs = r?.loginMs ?? 0;
    const breakMs = [...(r?.breakMs ?? [0, 0, 0, 0, 0, 0, 0])];
    const o = open.get(a.agentId);
    if (o?.loginSince != null) loginMs += overlap(o.loginSince, now, lo, hi);
    if (o?.breakCode != null && o.breakSince != null) breakMs[o.breakCode]! += overlap(o.breakSince, now, lo, hi);
    const offered = r?.offered ?? 0;
    const answered = r?.answered ?? 0;
    const talkSeconds = Math.floor((r?.talkMs ?? 0) / 1000);
    return {
      agentId: a.agentId,
      name: a.name,
      offered,
      answered,
      missed: offered - answered,
      talkSeconds,
      avgTalkSeconds: answered > 0 ? round1(talkSeconds / answered) : 0,
      loginSeconds: Math.floor(loginMs / 1000),
      breakSeconds: Object.fromEntries([1, 2, 3, 4, 5, 6].map((c) => [String(c), Math.floor(breakMs[c]! / 1000)])),
    };
  });
}

export const MAX_INTERVALS = 1000;

/** The service report: one item per local hour or day of [from, to), empty ones included, oldest first. */
export async function serviceReport(ctx: Context, svcId: number, from: number, to: number, unit: Interval, slSeconds: number) {
  const service = await serviceOf(ctx, svcId);
  const starts = intervalStarts(from, to, unit, service.timezone, MAX_INTERVALS);
  if (starts.length - 1 > MAX_INTERVALS) throw invalid(`from, to: more than ${MAX_INTERVALS} intervals of one ${unit}`);
  const items = starts.slice(0, -1).map((start) => ({ start, inbound: 0, outbound: 0, answered: 0, missed: 0, abandoned: 0, entered: 0, withinSl: 0, waited: 0, waitMs: 0 }));
  const indexOf = (t: number) => {
    // The last interval starting at or before t (hour rows nest in local days).
    let lo = 0;
    let hi = items.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (items[mid]!.start <= t) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  const { rows, waits } = ctx.analytics.store.serviceHours(svcId, starts[0]!, starts[starts.length - 1]!);
  for (const r of rows) {
    const it = items[indexOf(r.hourStart)]!;
    it.inbound += r.inbound;
    it.outbound += r.outbound;
    it.answered += r.answered;
    it.missed += r.missed;
    it.abandoned += r.abandoned;
    it.entered += r.entered;
    it.waited += r.waited;
    it.waitMs += r.waitMs;
  }
  for (const w of waits) if (w.waitS <= slSeconds) items[indexOf(w.hourStart)]!.withinSl += w.calls;
  return items.map((it) => ({
    start: it.start,
    inbound: it.inbound,
    outbound: it.outbound,
    answered: it.answered,
    missed: it.missed,
    abandoned: it.abandoned,
    serviceLevel: it.entered > 0 ? round1((100 * it.withinSl) / it.entered) : null,
    avgWaitSeconds: it.waited > 0 ? round1(it.waitMs / 1000 / it.waited) : null,
  }));
}

/** A past instant: not later than now (400 naming `at`). */
export function pastInstant(ctx: Context, at: number): number {
  if (at > ctx.now()) throw invalid('at must not be later than now');
  return at;
}

/**
 * A service's dashboard documents as they stood at `at`: its snapshot at the last boundary before
 * `at`, plus its events among the at most SNAPSHOT_EVERY events of the log after that boundary.
 * `read` is how many events of the log were read (bounded, whatever the age of `at`).
 */
export async function timelineStateAt(store: AnalyticsStore, events: EventStore, svcId: number, at: number): Promise<{ state: TimelineState; read: number }> {
  const { position, state } = store.timelineAt(svcId, at);
  const fold = state ?? new Map();
  const page = await events.readAll({ after: position, maxCount: SNAPSHOT_EVERY });
  for (const e of page) {
    if (e.time > at) break;
    if (timelineServices(e).includes(svcId)) applyTimeline(fold, svcId, e);
  }
  return { state: fold, read: page.length };
}

const stateAt = async (ctx: Context, svcId: number, at: number) => (await timelineStateAt(ctx.analytics.store, ctx.events, svcId, at)).state;

function agentsAt(state: TimelineState, svcId: number): AgentDoc[] {
  return docsOf<AgentDoc>(state, 'agents')
    .filter((a) => a.exists && a.svcId === svcId)
    .sort((a, b) => a.agentId - b.agentId);
}

/** GET /agents?at=: the agent records as they were. */
export async function agentsAsOf(ctx: Context, user: AuthUser, svcId: number, at: number) {
  const all = agentsAt(await stateAt(ctx, svcId, at), svcId);
  if (user.admin) return all.map(agentRecord);
  return all.filter((a) => a.agentId === user.agentId).map(agentRecord);
}

/** GET /dashboard?at=: the dashboard as it would have answered at that instant (same shape as the live one). */
export async function dashboardAsOf(ctx: Context, user: AuthUser, svcId: number, at: number) {
  const state = await stateAt(ctx, svcId, at);
  const service = docOf<ServiceDoc>(state, 'services', String(svcId));
  if (!service) throw notFound(`service ${svcId} was not provisioned at ${at}`);
  const all = agentsAt(state, svcId);
  const visible = user.admin ? all : all.filter((a) => a.agentId === user.agentId);
  const stats = docOf<CallStatsDoc>(state, 'call-stats', callStatsKey(svcId, dayOf(at, service.timezone)));
  const inIvr = docsOf(state, 'in-ivr').length;
  const waiting = docsOf<QueuedCallerDoc>(state, 'queued-callers').sort((a, b) => a.since - b.since || (a.xnid < b.xnid ? -1 : 1));
  const data: Record<string, { number: string; xnid: string; since: number }[]> = {};
  for (const w of waiting) (data[String(w.queueId)] ??= []).push({ number: w.number, xnid: w.xnid, since: w.since });
  return {
    isSupervisor: user.admin,
    userName: user.username,
    serviceName: service.name,
    svcId,
    agents: visible.map(agentRecord),
    svcSkills: service.skills.map((s, index) => ({ id: s.id, name: s.name, index, svc_id: svcId })),
    dids: service.dids,
    agentsData: visible.map((a) => ({
      skills: a.skills.map((k) => ({ id: a.agentId * 1000 + k.skillId, agent_id: a.agentId, skill_id: k.skillId, skill_level: k.level })),
      number: a.number,
      name: a.name,
      id: a.agentId,
      sip: a.sip,
      status: dashboardStatus(a, at),
    })),
    callStats: {
      totalCalls: stats?.totalCalls ?? 0,
      inIvr,
      ibCalls: stats?.ibCalls ?? 0,
      obCalls: stats?.obCalls ?? 0,
    },
    customersInQueue: { data, dataCount: String(waiting.length) },
    agentStats: {
      freeAgents: all.filter((a) => isFree(a, at)).length,
      busyAgents: all.filter((a) => a.call !== null).length,
    },
  };
}
