/** Read model `agents`: each agent's state by `<svcId>-<agentId>`, from the same evolve as the aggregate. */
import type { RecordedEvent } from '../gateways/event-store/port.js';
import type { UserProvisionedData } from '../domain/events.js';
import { evolveAgent, initialAgentState, type AgentEvent, type AgentState } from '../commands/agent/agent.js';
import type { Projection } from './projection.js';

export interface AgentDoc extends AgentState, Record<string, unknown> {
  /** The user holding this agent's credentials (null until one is provisioned). */
  userId: number | null;
}

const AGENT_EVENTS = new Set([
  'AgentProvisioned',
  'AgentLoggedIn',
  'AgentLoggedOut',
  'AgentBreakStarted',
  'AgentBreakEnded',
  'AgentNumberChanged',
  'AgentNameChanged',
  'AgentWrapUpSet',
  'AgentReserved',
  'AgentAnswered',
  'AgentReleased',
]);

export const agentKey = (svcId: number, agentId: number) => `${svcId}-${agentId}`;

export const agentsProjection: Projection<AgentDoc> = {
  name: 'agents',
  keys(e: RecordedEvent) {
    if (AGENT_EVENTS.has(e.type)) {
      const d = e.data as { svcId: number; agentId: number };
      return [agentKey(d.svcId, d.agentId)];
    }
    if (e.type === 'UserProvisioned') {
      const u = e.data as UserProvisionedData;
      return u.agentId === null ? [] : u.services.map((svc) => agentKey(svc, u.agentId!));
    }
    return [];
  },
  evolve(doc, e) {
    if (e.type === 'UserProvisioned') {
      const base = doc ?? { ...initialAgentState(), userId: null };
      return { ...base, userId: (e.data as UserProvisionedData).userId };
    }
    const { userId = null, ...state } = doc ?? { ...initialAgentState(), userId: null };
    const next = evolveAgent(state as AgentState, { type: e.type, data: e.data } as AgentEvent);
    // Until the first state change, the record's `time` is when the agent was provisioned.
    return { ...next, time: next.time || e.time, userId };
  },
};
