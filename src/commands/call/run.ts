/** Requests on an existing call (hangup, transfer, add a leg, monitor, callback, a simulated hangup). */
import { handleCommand } from '../decider.js';
import { callDecider, type CallCommand } from './call.js';
import { streams } from '../../domain/streams.js';
import type { Context } from '../../context.js';

/** Runs a command on call `xnid` and waits until the read models show it (read-your-writes). */
export async function runCallCommand(ctx: Context, xnid: string, command: CallCommand) {
  const r = await handleCommand(ctx.events, streams.call(xnid), callDecider, command);
  await ctx.sync.waitFor(r.position);
  return r;
}
