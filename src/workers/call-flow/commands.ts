/**
 * The call-flow worker's commands on the call and agent aggregates. A step replayed or raced by
 * another finds its command refused (conflict), which here means "already done": nothing to do.
 */
import type { Context } from '../../context.js';
import { expectedOf, handleCommand, toDomain, type Decider, type DomainEvent } from '../../commands/decider.js';
import { RETRY, conflictToRetry, pause } from '../../commands/retry.js';
import { aggregateCache } from '../../commands/aggregate-cache.js';
import type { ExpectedRevision, NewEvent } from '../../gateways/event-store/port.js';
import { callDecider, type CallCommand, type CallEvent, type CallState } from '../../commands/call/call.js';
import { agentDecider, isFree, type AgentCommand, type AgentState } from '../../commands/agent/agent.js';
import { streams } from '../../domain/streams.js';
import type { Actor } from './actor.js';
import type { Step, StepOutcome } from './steps.js';
import { AppError } from '../../domain/errors.js';

/** How long a recording URL in a webhook record stays valid. */
export const WEBHOOK_RECORDING_TTL_MS = 7 * 24 * 3600 * 1000;

/** The call's events and state after the command; null when it was refused. */
export async function callCommand(ctx: Context, xnid: string, command: CallCommand): Promise<{ events: CallEvent[]; state: CallState } | null> {
  try {
    const r = await handleCommand(ctx.events, streams.call(xnid), callDecider, command);
    return { events: r.events, state: r.state };
  } catch (err) {
    if (err instanceof AppError && err.code === 'CONFLICT') return null;
    throw err;
  }
}

/** The agent's state after the command; null when it was refused or there is no such agent. */
export async function agentCommand(ctx: Context, svcId: number, agentId: number, command: AgentCommand): Promise<AgentState | null> {
  try {
    return (await handleCommand(ctx.events, streams.agent(svcId, agentId), agentDecider, command)).state;
  } catch (err) {
    if (err instanceof AppError && (err.code === 'CONFLICT' || err.code === 'NOT_FOUND')) return null;
    throw err;
  }
}

export type { Step, StepOutcome } from './steps.js';

type AnyDecider = Decider<unknown, unknown, DomainEvent>;
const streamOf = (s: Step) => (s.kind === 'call' ? streams.call(s.xnid) : streams.agent(s.svcId, s.agentId));
const deciderOf = (s: Step) => (s.kind === 'call' ? callDecider : agentDecider) as unknown as AnyDecider;
const refused = (s: Step, err: unknown) => err instanceof AppError && (err.code === 'CONFLICT' || (s.kind === 'agent' && err.code === 'NOT_FOUND'));

/**
 * The commands of one reaction (say an agent answering: the agent's answer, the call's, the bridge)
 * decided in order, each on the state its predecessors left, and appended together: one transaction
 * and one sync instead of one per command, with the events in the order the commands came, each
 * stream checked against the revision it was decided on. A refused step (the callCommand /
 * agentCommand sense: already done, no such agent) appends nothing and the others still do. Decided
 * first on cached states without a read, like handleCommand: a refusal or a conflict decides again
 * on states read from the store (RETRY), then 503.
 */
export async function runSteps(ctx: Context, steps: Step[]): Promise<StepOutcome[]> {
  const cache = aggregateCache(ctx.events);
  let checked = false;
  for (let attempt = 1; ; attempt++) {
    // The pause before attempt n is the policy's for n - 1: attempt 2 (a recheck, mostly) goes at once.
    if (attempt > 1) await pause(RETRY.pauseMs(attempt - 1));
    const cur = new Map<string, { state: unknown; revision: number; position: number; decider: AnyDecider; checked: boolean }>();
    for (const s of steps) {
      const id = streamOf(s);
      if (cur.has(id)) continue;
      const decider = deciderOf(s);
      const peeked = checked ? undefined : cache.peek(id, decider);
      const loaded = peeked ?? (await cache.load(id, decider, toDomain));
      cur.set(id, { state: loaded.state, revision: loaded.revision, position: loaded.position, decider, checked: !peeked });
    }
    const outcomes: StepOutcome[] = [];
    const writes: { streamId: string; events: NewEvent[]; expectedRevision: ExpectedRevision; from: number }[] = [];
    let recheck = false;
    for (const s of steps) {
      const id = streamOf(s);
      const c = cur.get(id)!;
      if (s.if && !(s.if as (state: unknown, before: StepOutcome[]) => boolean)(c.state, outcomes)) {
        outcomes.push(null);
        recheck ||= !c.checked;
        continue;
      }
      let events: DomainEvent[];
      try {
        events = c.decider.decide(s.command, c.state);
      } catch (err) {
        if (!refused(s, err)) throw err;
        outcomes.push(null);
        recheck ||= !c.checked; // a refusal on a cached state may be a stale cache
        continue;
      }
      if (events.length === 0) recheck ||= !c.checked;
      for (const e of events) c.state = c.decider.evolve(c.state, e);
      if (events.length > 0) {
        const last = writes[writes.length - 1];
        const news = events.map((e) => ({ type: e.type, data: e.data }));
        if (last?.streamId === id) last.events.push(...news);
        else writes.push({ streamId: id, events: news, expectedRevision: expectedOf(c.revision), from: c.revision });
        c.revision += events.length;
      }
      outcomes.push({ state: c.state as CallState | AgentState, events });
    }
    if (recheck) {
      checked = true;
      continue;
    }
    if (writes.length === 0) return outcomes;
    try {
      const results = await ctx.events.appendToStreams(writes.map(({ streamId, events, expectedRevision }) => ({ streamId, events, expectedRevision })));
      // The cache learns each stream's state when the store holds exactly the events folded into it.
      const exact = new Map<string, boolean>();
      const position = new Map<string, number>();
      writes.forEach((w, k) => {
        exact.set(w.streamId, (exact.get(w.streamId) ?? true) && results[k]!.nextExpectedRevision === w.from + w.events.length);
        position.set(w.streamId, results[k]!.position);
      });
      for (const [id, ok] of exact) {
        const c = cur.get(id)!;
        if (ok) cache.remember(id, c.decider, { state: c.state, revision: c.revision, position: position.get(id)! });
        else cache.forget(id, c.decider);
      }
      return outcomes;
    } catch (err) {
      conflictToRetry(err, attempt);
      checked = true;
    }
  }
}

/**
 * The agent is busy by the state this process last knew (aggregate cache, no read). The free-agents
 * read model may lag the reservations just made by a few milliseconds; trying such an agent costs a
 * refused reservation and a read of its stream. An agent not cached, or free, is tried.
 */
export function knownBusy(ctx: Context, svcId: number, agentId: number): boolean {
  const cached = aggregateCache(ctx.events).peek<AgentState>(streams.agent(svcId, agentId), agentDecider);
  return cached !== undefined && cached.state.exists && !isFree(cached.state, ctx.now());
}

/** The commands of a call's actor: its state follows its own steps, and what it carries goes first. */
export class ActorCommands {
  /** Agents whose reservation is being appended (`svcId:agentId`). */
  private readonly reserving = new Set<string>();

  constructor(private readonly ctx: Context) {}

  /**
   * Whether to try reserving the agent for a call: not when this process is reserving it for another
   * call right now, nor when its cached state says it is busy. Calls answered together all see the
   * same agent free longest; each tried it, and all but one conflicted again and again until the
   * winner's append was synced (reads do not see it before), then queued. Only this worker reserves
   * agents, so what it is doing is all there is to know; an agent skipped wrongly is offered on its
   * next release or by the queue's dispatch.
   */
  mayTry(svcId: number, agentId: number): boolean {
    return !this.reserving.has(`${svcId}:${agentId}`) && !knownBusy(this.ctx, svcId, agentId);
  }

  /** Several commands in one append (runSteps), after the steps the actor carried; outcomes of `steps` only. */
  async together(a: Actor, steps: Step[]): Promise<StepOutcome[]> {
    const all = [...a.carry.splice(0), ...steps];
    const outcomes = await runSteps(this.ctx, all);
    for (const [i, s] of all.entries()) if (outcomes[i] && s.kind === 'call' && s.xnid === a.xnid) a.state = outcomes[i]!.state as CallState;
    return outcomes.slice(all.length - steps.length);
  }

  async call(a: Actor, command: CallCommand): Promise<void> {
    await this.together(a, [{ kind: 'call', xnid: a.xnid, command }]);
  }

  /** Reserves the agent for the call, after `before` in the same append; null when it is not free. */
  async reserve(a: Actor, agentId: number, before: Step[] = [], onlyIf?: (before: StepOutcome[]) => boolean): Promise<AgentState | null> {
    const reserve: Step = { kind: 'agent', svcId: a.started.svcId, agentId, command: { type: 'Reserve', xnid: a.xnid, time: this.ctx.now() }, if: onlyIf && ((_, b) => onlyIf(b)) };
    const key = `${a.started.svcId}:${agentId}`;
    this.reserving.add(key);
    try {
      const s = (await this.together(a, [...before, reserve])).at(-1)?.state as AgentState | undefined;
      if (s) a.reserved.set(agentId, s);
      return s ?? null;
    } finally {
      this.reserving.delete(key);
    }
  }
}
