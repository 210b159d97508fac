/**
 * Crash recovery of the call-flow worker, run at its start before it takes any call: the calls a
 * previous process left open are ended (the switch lost their legs) and every agent still held by
 * a call that is over is freed. Only the call-flow worker reserves agents and it runs once (the
 * worker lease), so nothing races this.
 */
import type { Context } from '../../context.js';
import { handleCommand, loadAggregate } from '../../commands/decider.js';
import { callDecider } from '../../commands/call/call.js';
import { streams } from '../../domain/streams.js';
import type { RecordingSigner } from '../../domain/recording.js';
import type { CallDoc } from '../../projections/calls.js';
import type { AgentDoc } from '../../projections/agents.js';
import { serviceAgents } from '../../queries/agents.js';
import { WEBHOOK_RECORDING_TTL_MS, agentCommand } from './commands.js';

/** Ends calls left open by a previous process and frees their agents; answers the calls it ended. */
export async function recoverCalls(ctx: Context, signer: RecordingSigner): Promise<string[]> {
  const ended: string[] = [];
  const open = await ctx.reads.find<CallDoc>('calls', { ended: false });
  for (const doc of open) {
    const { state } = await loadAggregate(ctx.events, streams.call(doc.xnid), callDecider);
    if (!state.started || state.ended) continue;
    for (const agent of await serviceAgents(ctx, state.started.svcId)) {
      if (agent.call?.xnid === doc.xnid) {
        await agentCommand(ctx, agent.svcId, agent.agentId, { type: 'Release', xnid: doc.xnid, time: ctx.now() });
      }
    }
    const now = ctx.now();
    await handleCommand(ctx.events, streams.call(doc.xnid), callDecider, { type: 'End', time: now, recordingUrl: signer.url(doc.xnid, now + WEBHOOK_RECORDING_TTL_MS) });
    ctx.logger.warn({ xnid: doc.xnid }, 'ended a call left open by a previous process');
    ended.push(doc.xnid);
  }
  // Every agent still held by a call that has ended (or never started) is freed, whatever left it
  // so: only this process reserves agents, and it has no call running yet.
  for (const agent of await ctx.reads.find<AgentDoc>('agents', { exists: true })) {
    if (!agent.call) continue;
    const { state } = await loadAggregate(ctx.events, streams.call(agent.call.xnid), callDecider);
    if (state.started && !state.ended) continue;
    await agentCommand(ctx, agent.svcId, agent.agentId, { type: 'Release', xnid: agent.call.xnid, time: ctx.now() });
    ctx.logger.warn({ svcId: agent.svcId, agentId: agent.agentId, xnid: agent.call.xnid }, 'freed an agent held by an ended call');
  }
  return ended;
}
