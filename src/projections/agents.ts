/** Read model `agents`: each agent's state by `<svcId>-<agentId>`, from the same evolve as the aggregate. */
import { AGENT_EVENT_TYPES, copyAgent, evolveAgent, initialAgentState, type AgentState } from '../commands/agent/agent.js';
import { projection, type Projection } from './projection.js';

export interface AgentDoc extends AgentState, Record<string, unknown> {
  /** The user holding this agent's credentials (null until one is provisioned). */
  userId: number | null;
}

export const agentKey = (svcId: number, agentId: number) => `${svcId}-${agentId}`;

export const agentsProjection: Projection<AgentDoc> = projection({
  name: 'agents',
  canHandle: [...AGENT_EVENT_TYPES, 'UserProvisioned'],
  keys(e) {
    if (e.type !== 'UserProvisioned') return [agentKey(e.data.svcId, e.data.agentId)];
    const u = e.data;
    return u.agentId === null ? [] : u.services.map((svc) => agentKey(svc, u.agentId!));
  },
  evolve(doc, e) {
    // A new object per event, built without spreads (see copyAgent: replay folds millions): the
    // agent's state, then the record's own field.
    const state = doc ?? initialAgentState();
    if (e.type === 'UserProvisioned') {
      const next = copyAgent(state) as AgentDoc;
      next.userId = e.data.userId;
      return next;
    }
    const next = evolveAgent(state, e) as AgentDoc;
    next.userId = doc?.userId ?? null;
    // Until the first state change, the record's `time` is when the agent was provisioned.
    if (!next.time) next.time = e.time;
    return next;
  },
});
