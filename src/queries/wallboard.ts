/** What the wallboard shows of a service now: agents in their states, callers waiting per queue, today's counters. */
import type { Context } from '../context.js';
import type { ServiceDoc } from '../projections/services.js';
import { BREAK_NAMES, dashboardStatus } from '../commands/agent/agent.js';
import { dayOf } from '../domain/time.js';
import { notFound } from '../domain/errors.js';
import { serviceAgents } from './agents.js';
import { callStatsKey, type CallStatsDoc, type QueuedCallerDoc } from '../projections/calls.js';
import { callOutcomesProjection, todayCounters, type CallOutcomeDoc } from '../projections/call-outcomes.js';

export type WallboardState = 'free' | 'ringing' | 'call' | 'break' | 'wrapup' | 'logout';

const STATES: Record<string, WallboardState> = { '0': 'free', '1': 'call', '2': 'logout', '3': 'break', '4': 'wrapup', '5': 'ringing' };

/**
 * A day's call outcomes, read again only when the read model has moved: every wallboard of a service
 * refreshes on every event, and `find` scans the collection.
 */
const outcomeCache = new WeakMap<Context, Map<string, { checkpoint: number; docs: CallOutcomeDoc[] }>>();

async function todaysOutcomes(ctx: Context, svcId: number, day: string): Promise<CallOutcomeDoc[]> {
  let byKey = outcomeCache.get(ctx);
  if (!byKey) outcomeCache.set(ctx, (byKey = new Map()));
  const key = `${svcId}|${day}`;
  const checkpoint = await ctx.reads.checkpoint(callOutcomesProjection.name);
  const hit = byKey.get(key);
  if (hit && hit.checkpoint === checkpoint) return hit.docs;
  const docs = await ctx.reads.find<CallOutcomeDoc>(callOutcomesProjection.name, { svcId, day });
  // Only today's entry per service is kept.
  for (const k of byKey.keys()) if (k.startsWith(`${svcId}|`)) byKey.delete(k);
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
  const waiting = await ctx.reads.find<QueuedCallerDoc>('queued-callers', { svcId }, { orderBy: { field: 'since' } });
  const queues = service.queues.map((q) => ({
    id: q.id,
    name: q.name,
    callers: waiting.filter((w) => w.queueId === q.id).map((w) => ({ xnid: w.xnid, number: w.number, since: w.since })),
  }));
  const stats = await ctx.reads.get<CallStatsDoc>('call-stats', callStatsKey(svcId, day));
  const outcomes = todayCounters(await todaysOutcomes(ctx, svcId, day), now);
  return {
    service: { id: svcId, name: service.name, timezone: service.timezone },
    now,
    day,
    agents,
    queues,
    counters: {
      totalCalls: stats?.totalCalls ?? 0,
      inbound: stats?.ibCalls ?? 0,
      outbound: stats?.obCalls ?? 0,
      ...outcomes,
    },
  };
}
