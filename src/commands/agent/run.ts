/** Running an agent's command for a caller that answers with the agent's new state (PATCH /agents and the wrap-up route). */
import { handleCommand } from '../decider.js';
import { agentDecider, type AgentCommand } from './agent.js';
import { streams } from '../../domain/streams.js';
import type { Context } from '../../context.js';
import type { AgentDoc } from '../../projections/agents.js';

/** Runs an agent command and waits until the read models show it, so the answer reads its own write. */
export async function runAgentCommand(ctx: Context, agent: Pick<AgentDoc, 'svcId' | 'agentId'>, command: AgentCommand) {
  const result = await handleCommand(ctx.events, streams.agent(agent.svcId, agent.agentId), agentDecider, command);
  await ctx.sync.waitFor(result.position);
  return result.state;
}
