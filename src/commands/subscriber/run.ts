/** Registering and updating a subscriber (POST and PATCH /subscriber). */
import { handleCommand } from '../decider.js';
import { subscriberDecider, type SubscriberCommand } from './subscriber.js';
import { streams } from '../../domain/streams.js';
import type { Context } from '../../context.js';

/** Runs a command on the subscriber of (svcId, agentId) and waits until the read models show it. */
export async function runSubscriberCommand(ctx: Context, command: SubscriberCommand) {
  const result = await handleCommand(ctx.events, streams.subscriber(command.svcId, command.agentId), subscriberDecider, command);
  await ctx.sync.waitFor(result.position);
  return result;
}
