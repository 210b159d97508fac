/**
 * The call-flow worker's side of routing (src/domain/routing.ts holds the policy): what an inbound
 * call's queue and customer priority are, and which agents a call tries given the callers waiting
 * beside it, so a caller ranked lower never takes an agent a caller ranked higher would be given.
 */
import type { Context } from '../../context.js';
import type { CallCommand, CallStartedData } from '../../commands/call/call.js';
import { freeAgents } from '../../queries/agents.js';
import { customerPriority } from '../../queries/customers.js';

export { customerPriority };
import { agentsToTry } from './agent-picker.js';
import type { ServiceDoc } from '../../projections/services.js';
import { customerKey, type CustomerDoc } from '../../projections/customers.js';
import type { AgentDoc } from '../../projections/agents.js';
import { normalizePhone } from '../../domain/phone.js';
import { agentsLeftFor, assignAgents, compareCallers, queueForDigits, routedCaller, type RoutedCaller } from '../../domain/routing.js';
import type { Actor, CallRoute } from './actor.js';
import type { CallbackEntry, QueueCallbacks } from './callbacks.js';
import type { ActorCommands } from './commands.js';

/** No queue (not inbound, or blocked) and no customer priority. */
const NO_ROUTE: CallRoute = { queue: null, customerPriority: 0 };

/** The route of a call at its start: from the CallStarted event where it carries one, else from the read models. */
export async function routeOf(ctx: Context, started: CallStartedData): Promise<CallRoute> {
  if (started.direction !== 'Inbound' || started.blocked) return NO_ROUTE;
  const service = await ctx.reads.get<ServiceDoc>('services', String(started.svcId));
  const queues = service?.queues ?? [];
  const queue = started.queueId !== undefined ? (queues.find((q) => q.id === started.queueId) ?? null) : queueForDigits(queues, started.data);
  const priority = started.priority ?? (started.queueId !== undefined ? 0 : await customerPriority(ctx, started.svcId, started.customerNumber));
  return { queue, customerPriority: priority };
}

/** The caller of this call as the policy sees it (not yet queued: joining now). */
export function callerOf(a: Actor, now: number): RoutedCaller {
  return routedCaller(a.xnid, {
    inbound: a.started.direction === 'Inbound',
    queue: a.route.queue,
    customerPriority: a.route.customerPriority,
    skillId: a.started.skillId,
    queuedAt: a.state.queuedAt ?? now,
    tried: a.tried,
  });
}

/** The service's callers waiting for an agent now: queued, no agent being rung for them, not ending. */
export function waitingCallers(actors: Iterable<Actor>, svcId: number, now: number): { a: Actor; caller: RoutedCaller }[] {
  const out: { a: Actor; caller: RoutedCaller }[] = [];
  for (const a of actors) {
    if (a.started.svcId === svcId && a.state.queuedAt !== null && a.offering === null && !a.ending) out.push({ a, caller: callerOf(a, now) });
  }
  return out.sort((x, y) => compareCallers(x.caller, y.caller));
}

/** The free agents (longest free first) this caller tries, in order, leaving those to callers ranked before it (callbacks among them). */
export function agentsForCall(caller: RoutedCaller, svcId: number, free: readonly AgentDoc[], actors: Iterable<Actor>, others: readonly RoutedCaller[], now: number): number[] {
  // No free agent (every agent busy, many callers waiting): nothing to rank. Ranking the waiting
  // callers anyway cost each pick O(waiting log waiting), each dispatch the square of it.
  if (free.length === 0) return [];
  const waiting = waitingCallers(actors, svcId, now).map((w) => w.caller);
  return agentsLeftFor(caller, others.length ? [...waiting, ...others] : waiting, free, now);
}

/** The agents to try for the call, in order: the named agent alone, else the free agents by the routing policy. */
export async function agentOrder(ctx: Context, a: Actor, actors: Iterable<Actor>, callbacks: QueueCallbacks): Promise<number[]> {
  if (a.started.namedAgentId !== null) return agentsToTry(a.started, [], a.tried);
  const svcId = a.started.svcId;
  const others = (await callbacks.callers(svcId)).map((c) => c.caller);
  const now = ctx.now();
  return agentsForCall(callerOf(a, now), svcId, await freeAgents(ctx, svcId), actors, others, now);
}

export type Turn = { a: Actor; entry?: undefined } | { a?: undefined; entry: CallbackEntry; caller: RoutedCaller };

/** The service's waiting callers and kept callback places, in caller order: the order the dispatch serves them. */
export async function turns(actors: Iterable<Actor>, callbacks: QueueCallbacks, svcId: number, now: number): Promise<Turn[]> {
  const live = waitingCallers(actors, svcId, now);
  const kept = await callbacks.callers(svcId);
  if (kept.length === 0) return live;
  return [...live.map((l) => ({ ...l, rank: l.caller })), ...kept.map((k) => ({ ...k, rank: k.caller }))].sort((x, y) => compareCallers(x.rank, y.rank));
}

/** Places a kept callback with the agent routing gives it, if one is free. */
export async function placeCallback(ctx: Context, entry: CallbackEntry, caller: RoutedCaller, actors: Iterable<Actor>, callbacks: QueueCallbacks, commands: ActorCommands): Promise<void> {
  const others = (await callbacks.callers(entry.svcId)).map((c) => c.caller);
  const now = ctx.now();
  const agents = agentsForCall(caller, entry.svcId, await freeAgents(ctx, entry.svcId), actors, others, now);
  if (agents.length > 0) await callbacks.place(entry, agents, commands);
}

/** The call joins a queue: an inbound caller the one its IVR digits chose, any other the service's first. */
export async function queueCommand(ctx: Context, a: Actor): Promise<CallCommand> {
  const queueId = a.route.queue?.id ?? (await ctx.reads.get<ServiceDoc>('services', String(a.started.svcId)))?.queues[0]?.id ?? 0;
  const inbound = a.started.direction === 'Inbound';
  return { type: 'Queue', queueId, time: ctx.now(), ...(inbound ? { priority: a.route.customerPriority } : { outbound: true as const }) };
}

/**
 * The service's turns the free agents can serve now: those the policy's matching (assignAgents) gives an agent.
 * Any other caller would find no agent left for it, so the dispatch offers only these: offering every
 * waiting caller cost each dispatch the square of the queue's length, and a long queue (agents all
 * busy under load) then starved the calls it waited for.
 */
export async function servedTurns(ctx: Context, actors: Iterable<Actor>, callbacks: QueueCallbacks, svcId: number): Promise<Turn[]> {
  const free = await freeAgents(ctx, svcId);
  if (free.length === 0) return [];
  const now = ctx.now();
  const all = await turns(actors, callbacks, svcId, now);
  const callers = all.map((t) => (t.a ? callerOf(t.a, now) : t.caller));
  const matched = assignAgents(callers, free, now);
  return all.filter((_, i) => matched.has(callers[i]!.id));
}
