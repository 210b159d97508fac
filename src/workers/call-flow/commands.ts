/**
 * The call-flow worker's commands on the call and agent aggregates. A step replayed or raced by
 * another finds its command refused (conflict), which here means "already done": nothing to do.
 */
import type { Context } from '../../context.js';
import { handleCommand } from '../../commands/decider.js';
import { callDecider, type CallCommand, type CallEvent, type CallState } from '../../commands/call/call.js';
import { agentDecider, type AgentCommand, type AgentState } from '../../commands/agent/agent.js';
import { streams } from '../../domain/streams.js';
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
