/**
 * Which agents a call is offered to, and which waiting calls go first: pure functions of what the
 * read models say, so the rules are tested without a switch or a store. The call-flow worker then
 * reserves the agents in this order through the agent aggregate (an expected revision), which is
 * what keeps an agent from getting two calls.
 */

export interface CallWants {
  /** The one agent the call is for (POST /calls naming an agent), or null for any agent. */
  namedAgentId: number | null;
  /** Agents with this skill go first when there are any; null: no preference. */
  skillId: number | null;
}

export interface FreeAgent {
  agentId: number;
  skills: { skillId: number }[];
}

/**
 * The agents to try, in order: the named agent alone (none once it did not answer this call), else
 * the free agents in the order given (longest free first) that have not refused this call, those
 * with the call's skill only when there are any.
 */
export function agentsToTry(call: CallWants, free: readonly FreeAgent[], tried: ReadonlySet<number>): number[] {
  if (call.namedAgentId !== null) return tried.has(call.namedAgentId) ? [] : [call.namedAgentId];
  let candidates = free.filter((a) => !tried.has(a.agentId));
  if (call.skillId !== null) {
    const skilled = candidates.filter((a) => a.skills.some((k) => k.skillId === call.skillId));
    if (skilled.length) candidates = skilled;
  }
  return candidates.map((a) => a.agentId);
}

export interface WaitingCall {
  svcId: number;
  /** When the caller joined the queue; null: not queued. */
  queuedAt: number | null;
  /** An agent is being rung for it already. */
  offering: boolean;
  ending: boolean;
}

/** The calls of a service to offer to agents now: queued, not being offered, not ending; longest waiting first. */
export function callsToOffer<C extends WaitingCall>(calls: Iterable<C>, svcId: number): C[] {
  return [...calls].filter((c) => c.svcId === svcId && c.queuedAt !== null && !c.offering && !c.ending).sort((x, y) => x.queuedAt! - y.queuedAt!);
}
