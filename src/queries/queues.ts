/**
 * GET /api/v1/queues (CONTRACT section 17): each queue's waiting callers in the order routing serves
 * them, the free agents who could take a caller joining now, and the expected wait of such a caller.
 */
import type { Context } from '../context.js';
import type { ServiceDoc } from '../projections/services.js';
import type { QueueCallbackDoc, QueuedCallerDoc } from '../projections/calls.js';
import type { AgentDoc } from '../projections/agents.js';
import type { QueueDef } from '../domain/events.js';
import { isFree } from '../commands/agent/agent.js';
import { notFound } from '../domain/errors.js';
import { compareCallers, expectedWaitMs, mayTake, routedCaller, type RoutedCaller } from '../domain/routing.js';
import { serviceAgents } from './agents.js';

export interface QueueWaiting {
  xnid: string;
  number: string;
  position: number;
  waitSeconds: number;
  priority: number;
}

/** What the wallboard shows besides: when the caller joined, and whether it is a kept callback place. */
export interface QueueWaitingMore extends QueueWaiting {
  since: number;
  callback: boolean;
}

export interface QueueState<W extends QueueWaiting = QueueWaiting> {
  queueId: number;
  name: string;
  waiting: W[];
  longestWaitSeconds: number;
  agentsFree: number;
  expectedWaitSeconds: number | null;
}

/** A waiting caller as routing ranks it. */
export const callerOfDoc = (w: QueuedCallerDoc, queue: QueueDef | null): RoutedCaller =>
  routedCaller(w.xnid, { inbound: !w.outbound, queue, customerPriority: w.priority ?? 0, skillId: null, queuedAt: w.since });

/** Logged in and not on a break: an agent who takes calls now or once off the current one. */
const staffed = (a: AgentDoc) => a.exists && a.status === 0 && (a.breakCode === -1 || a.breakCode === 0);

/**
 * When a staffed agent is expected to be free: now, the end of its wrap-up, or its call's start plus
 * the handle time; a call that has outlasted it is expected to take half a handle time more. Without
 * a handle time a busy agent is simply not free (the estimate then has no basis unless enough are).
 */
function availableAt(a: AgentDoc, handleMs: number | null, now: number): number {
  if (isFree(a, now)) return now;
  if (!a.call) return a.freeSince;
  if (handleMs === null) return now + 1;
  return Math.max((a.call.since ?? a.time) + handleMs, now + handleMs / 2);
}

/** The service's waiting callers and kept callback places (as the call that asked for it, with no live leg). */
export async function waitingIn(ctx: Context, svcId: number): Promise<(QueuedCallerDoc & { callback?: true })[]> {
  const live = await ctx.reads.find<QueuedCallerDoc>('queued-callers', { svcId }, { orderBy: { field: 'since' } });
  const kept = await ctx.reads.find<QueueCallbackDoc>('queue-callbacks', { svcId });
  if (kept.length === 0) return live;
  return [
    ...live,
    ...kept.map((k) => ({ callback: true as const, svcId, queueId: k.queueId, number: k.number, xnid: k.xnid, since: k.queuedAt, ...(k.priority ? { priority: k.priority } : {}), ...(k.inbound ? {} : { outbound: true as const }) })),
  ];
}

/** GET /api/v1/queues: the contract's fields only. */
export async function queueList(ctx: Context, svcId: number): Promise<QueueState[]> {
  return (await queueStates(ctx, svcId)).map((q) => ({ ...q, waiting: q.waiting.map(({ xnid, number, position, waitSeconds, priority }) => ({ xnid, number, position, waitSeconds, priority })) }));
}

export async function queueStates(ctx: Context, svcId: number): Promise<QueueState<QueueWaitingMore>[]> {
  const service = await ctx.reads.get<ServiceDoc>('services', String(svcId));
  if (!service) throw notFound(`service ${svcId} not found`);
  const now = ctx.now();
  const agents = (await serviceAgents(ctx, svcId)).filter(staffed);
  const waitingDocs = await waitingIn(ctx, svcId);
  const byId = new Map(service.queues.map((q) => [q.id, q]));
  const all = waitingDocs.map((w) => ({ w, caller: callerOfDoc(w, byId.get(w.queueId) ?? null) }));
  const known = agents.filter((a) => (a.handleMs ?? 0) > 0);
  const serviceHandle = known.length ? known.reduce((n, a) => n + a.handleMs, 0) / known.length : null;
  return service.queues.map((q) => {
    const mine = all.filter((x) => x.w.queueId === q.id).sort((x, y) => compareCallers(x.caller, y.caller));
    const joining = routedCaller('', { inbound: true, queue: q, customerPriority: 0, skillId: null, queuedAt: now });
    // The agents who may take a caller of this queue (the skilled ones, for a queue with a skill).
    const able = agents.filter((a) => mayTake(joining, a, now));
    const abler = able.filter((a) => (a.handleMs ?? 0) > 0);
    const handleMs = abler.length ? abler.reduce((n, a) => n + a.handleMs, 0) / abler.length : serviceHandle;
    // Ahead of a newcomer: this queue's callers ranked before it, and callers of queues ranked higher.
    const ahead = all.filter((x) => (x.w.queueId === q.id ? compareCallers(x.caller, joining) < 0 : x.caller.queuePriority > joining.queuePriority)).length;
    const expected = expectedWaitMs(ahead, able.map((a) => availableAt(a, handleMs, now)), handleMs, now);
    const waitS = (since: number) => Math.max(0, Math.floor((now - since) / 1000));
    return {
      queueId: q.id,
      name: q.name,
      waiting: mine.map(({ w }, i) => ({ xnid: w.xnid, number: w.number, position: i + 1, waitSeconds: waitS(w.since), priority: w.priority ?? 0, since: w.since, callback: w.callback === true })),
      longestWaitSeconds: mine.reduce((m, { w }) => Math.max(m, waitS(w.since)), 0),
      agentsFree: able.filter((a) => isFree(a, now) && mayTake(joining, a, now)).length,
      expectedWaitSeconds: expected === null ? null : Math.round(expected / 1000),
    };
  });
}
