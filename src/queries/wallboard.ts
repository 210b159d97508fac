/** What the wallboard shows of a service now: agents in their states, callers waiting per queue in the order served, alerts, today's counters. */
import type { Context } from '../context.js';
import type { ServiceDoc } from '../projections/services.js';
import { BREAK_NAMES, dashboardStatus } from '../commands/agent/agent.js';
import { dayOf } from '../domain/time.js';
import { notFound } from '../domain/errors.js';
import { serviceAgents } from './agents.js';
import { callStatsKey, type CallStatsDoc } from '../projections/calls.js';
import type { QueueAlertDoc } from '../projections/queue-alerts.js';
import { queueStates } from './queues.js';
import { callOutcomesProjection, todayCounters, type CallOutcomeDoc } from '../projections/call-outcomes.js';

export type WallboardState = 'free' | 'ringing' | 'call' | 'break' | 'wrapup' | 'logout';

const STATES: Record<string, WallboardState> = { '0': 'free', '1': 'call', '2': 'logout', '3': 'break', '4': 'wrapup', '5': 'ringing' };

/**
 * A day's call outcomes, read again only when the read model has moved: every wallboard of a service
 * refreshes on every event, and `find` scans the collection.
 */
const outcomeCache = new WeakMap<Context, Map<string, { checkpoint: number; docs: CallOutcomeDoc[] }>>();

/** A day's call outcomes of a service (the wallboard's counters, the queue alerts' service level). */
export async function todaysOutcomes(ctx: Context, svcId: number, day: string): Promise<CallOutcomeDoc[]> {
  let byKey = outcomeCache.get(ctx);
  if (!byKey) outcomeCache.set(ctx, (byKey = new Map()));
  const key = `${svcId}|${day}`;
  const checkpoint = await ctx.reads.checkpoint(callOutcomesProjection.name);
  const hit = byKey.get(key);
  if (hit && hit.checkpoint === checkpoint) return hit.docs;
  const docs = await ctx.reads.find<CallOutcomeDoc>(callOutcomesProjection.name, { svcId, day });
  // At most two days per service are kept (the alerts' 15 minutes may reach into yesterday).
  const mine = [...byKey.keys()].filter((k) => k.startsWith(`${svcId}|`) && k !== key).sort();
  for (const k of mine.slice(0, -1)) byKey.delete(k);
  byKey.set(key, { checkpoint, docs });
  return docs;
}

export async function wallboard(ctx: Context, svcId: number) {
  const service = await ctx.reads.get<ServiceDoc>('services', String(svcId));
  if (!service) throw notFound(`service ${svcId} not found`);
  const now = ctx.now();
  const day = dayOf(now, service.timezone);
  const agents = (await serviceAgents(ctx, svcId)).map((a) => {
    const state = STATES[dashboardStatus(a, now)]!;
    // Free after a wrap-up: free since the wrap-up ended, not since the call did.
    const since = state === 'free' ? Math.max(a.time, a.freeSince) : a.time;
    return { id: a.agentId, name: a.name, number: a.number, state, since, breakName: state === 'break' ? (BREAK_NAMES[a.breakCode] ?? null) : null };
  });
  // Callers in the order they are served, each queue's expected wait and its live alerts (CONTRACT section 17).
  const queues = (await queueStates(ctx, svcId)).map((q) => ({
    id: q.queueId,
    name: q.name,
    expectedWaitSeconds: q.expectedWaitSeconds,
    agentsFree: q.agentsFree,
    callers: q.waiting.map((w) => ({ xnid: w.xnid, number: w.number, since: w.since, position: w.position, priority: w.priority, callback: w.callback })),
  }));
  const alerts = (await ctx.reads.find<QueueAlertDoc>('queue-alerts', { svcId }))
    .map(({ queueId, reason, value, threshold, time }) => ({ queueId, reason, value, threshold, time }))
    .sort((a, b) => a.time - b.time);
  const stats = await ctx.reads.get<CallStatsDoc>('call-stats', callStatsKey(svcId, day));
  const outcomes = todayCounters(await todaysOutcomes(ctx, svcId, day), now);
  return {
    service: { id: svcId, name: service.name, timezone: service.timezone },
    now,
    day,
    agents,
    queues,
    alerts,
    counters: {
      totalCalls: stats?.totalCalls ?? 0,
      inbound: stats?.ibCalls ?? 0,
      outbound: stats?.obCalls ?? 0,
      ...outcomes,
    },
  };
}
