/** Read model `agents`: each agent's state by `<svcId>-<agentId>`, from the same evolve as the aggregate. */
import { AGENT_EVENT_TYPES, evolveAgent, initialAgentState, type AgentState } from '../commands/agent/agent.js';
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
    if (e.type === 'UserProvisioned') {
      const base = doc ?? { ...initialAgentState(), userId: null };
      return { ...base, userId: e.data.userId };
    }
    // evolveAgent copies the state it is given, userId included: one copy per event (replay folds millions).
    const state = doc ?? { ...initialAgentState(), userId: null };
    const next = evolveAgent(state, e) as AgentDoc;
    // Until the first state change, the record's `time` is when the agent was provisioned.
    return next.time ? next : { ...next, time: e.time };
  },
});
