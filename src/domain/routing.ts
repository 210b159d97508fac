/**
 * Contact-centre routing (CONTRACT section 17) as pure functions: which queue an inbound caller
 * joins, the order waiting callers are served in, and which free agent each may take. The call-flow
 * worker and GET /api/v1/queues both use these, so the order the API shows is the order served.
 */
import type { QueueDef } from './events.js';

/** The queue an inbound caller with these IVR digits joins: the longest matching `digits`, else the first queue; null when the service has none. */
export function queueForDigits(queues: readonly QueueDef[], digits: string): QueueDef | null {
  let best: QueueDef | null = null;
  for (const q of queues) {
    if (q.digits && digits.startsWith(q.digits) && q.digits.length > (best?.digits?.length ?? 0)) best = q;
  }
  return best ?? queues[0] ?? null;
}

/** A caller waiting for an agent, as the policy sees it. */
export interface RoutedCaller {
  id: string;
  /** The queue's priority (higher first); 0 when none. */
  queuePriority: number;
  /** The caller's customer priority (higher first); 0 when none. */
  customerPriority: number;
  /** When the caller joined the queue (epoch ms). */
  queuedAt: number;
  /** The skill the caller needs or prefers; null: any agent. */
  skillId: number | null;
  /**
   * true: only agents with `skillId` until `overflowAt` (a queue's skill, levels ordered); false: agents
   * with it first when there are any, longest free first (a call placed with `skill-id`).
   */
  strict: boolean;
  /** From this instant (epoch ms) any free agent may take a strict caller; null: never. */
  overflowAt: number | null;
  /** Agents that did not answer this caller. */
  tried?: ReadonlySet<number>;
}

/** A free agent, as the policy sees it. */
export interface RoutedAgent {
  agentId: number;
  freeSince: number;
  skills: readonly { skillId: number; level: number }[];
}

/** Caller order: queue priority, then customer priority (higher first), then longest waiting; ties by id. */
export function compareCallers(x: RoutedCaller, y: RoutedCaller): number {
  return y.queuePriority - x.queuePriority || y.customerPriority - x.customerPriority || x.queuedAt - y.queuedAt || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0);
}

const longestFree = (x: RoutedAgent, y: RoutedAgent) => x.freeSince - y.freeSince || x.agentId - y.agentId;
const levelOf = (a: RoutedAgent, skillId: number) => a.skills.find((k) => k.skillId === skillId)?.level;

/** Whether this agent may take this caller now. */
export function mayTake(c: RoutedCaller, a: RoutedAgent, now: number): boolean {
  if (c.tried?.has(a.agentId)) return false;
  if (c.skillId === null || !c.strict) return true;
  return levelOf(a, c.skillId) !== undefined || (c.overflowAt !== null && now >= c.overflowAt);
}

/**
 * The agents (of `agents`) this caller may take now, best first. A strict caller: skilled agents by
 * level (highest first) then longest free, then (overflowed) the others longest free. Otherwise:
 * the skilled agents longest free when there are any, else all longest free (CONTRACT section 5).
 */
export function agentsFor(c: RoutedCaller, agents: readonly RoutedAgent[], now: number): RoutedAgent[] {
  const open = agents.filter((a) => mayTake(c, a, now));
  if (c.skillId === null) return open.sort(longestFree);
  const skillId = c.skillId;
  const skilled = open.filter((a) => levelOf(a, skillId) !== undefined);
  if (!c.strict) return (skilled.length > 0 ? skilled : open).sort(longestFree);
  skilled.sort((x, y) => levelOf(y, skillId)! - levelOf(x, skillId)! || longestFree(x, y));
  const others = open.filter((a) => levelOf(a, skillId) === undefined).sort(longestFree);
  return [...skilled, ...others];
}

/**
 * Matches waiting callers to free agents: callers in caller order, each given the best agent it may
 * take that no caller before it was given. So no caller is passed over by a later-ranked one for an
 * agent it could take, and no agent is given twice. Returns caller id → agent id, in caller order.
 */
export function assignAgents(callers: readonly RoutedCaller[], agents: readonly RoutedAgent[], now: number): Map<string, number> {
  const out = new Map<string, number>();
  let left = agents.slice();
  for (const c of callers.slice().sort(compareCallers)) {
    if (left.length === 0) break;
    const best = agentsFor(c, left, now)[0];
    if (!best) continue;
    out.set(c.id, best.agentId);
    left = left.filter((a) => a !== best);
  }
  return out;
}

/**
 * The agents to try for `caller`, in order, when it competes with `waiting` for `agents`: the agents
 * the callers ranked before it would be given are left out, then its own best first.
 */
export function agentsLeftFor(caller: RoutedCaller, waiting: readonly RoutedCaller[], agents: readonly RoutedAgent[], now: number): number[] {
  if (agents.length === 0) return [];
  const ahead = waiting.filter((w) => w.id !== caller.id && compareCallers(w, caller) < 0);
  const taken = new Set(ahead.length > 0 ? assignAgents(ahead, agents, now).values() : []);
  return agentsFor(caller, agents.filter((a) => !taken.has(a.agentId)), now).map((a) => a.agentId);
}

/**
 * A caller as the policy sees it. An inbound caller follows its queue's rules; any other caller (an
 * outbound call waiting for an agent) ranks at priority 0 and prefers agents with its `skill-id`.
 */
export function routedCaller(
  id: string,
  call: { inbound: boolean; queue: QueueDef | null; customerPriority: number; skillId: number | null; queuedAt: number; tried?: ReadonlySet<number> },
): RoutedCaller {
  const q = call.inbound ? call.queue : null;
  const strict = q?.skillId !== undefined && q?.skillId !== null;
  return {
    id,
    queuePriority: q?.priority ?? 0,
    customerPriority: call.inbound ? call.customerPriority : 0,
    queuedAt: call.queuedAt,
    skillId: q ? (q.skillId ?? null) : call.skillId,
    strict,
    overflowAt: strict && q!.overflowS !== undefined ? call.queuedAt + q!.overflowS * 1000 : null,
    tried: call.tried,
  };
}

/**
 * The expected wait (ms) of a caller joining now behind `ahead` callers, served by agents who become
 * available at `availableAt` (now or earlier: free), each call then keeping an agent `handleMs`:
 * the callers ahead take the earliest agents in turn, and the newcomer gets the next. null when no
 * agent may take the caller, or when it would wait and no handle time is known.
 */
export function expectedWaitMs(ahead: number, availableAt: readonly number[], handleMs: number | null, now: number): number | null {
  if (availableAt.length === 0) return null;
  const times = availableAt.map((t) => Math.max(now, t)).sort((x, y) => x - y);
  if (ahead < times.filter((t) => t <= now).length) return 0;
  if (handleMs === null || handleMs <= 0) return null;
  // Few agents and callers: a sorted list is enough (the earliest agent serves the next caller).
  for (let i = 0; i < ahead; i++) {
    const t = times.shift()! + handleMs;
    const at = times.findIndex((x) => x > t);
    times.splice(at === -1 ? times.length : at, 0, t);
  }
  return times[0]! - now;
}
