/** Trying a failed delivery again (POST /ops/v1/deliveries/:id/redeliver). */
import { handleCommand } from '../decider.js';
import { redeliverDecider } from './delivery.js';
import { streams } from '../../domain/streams.js';
import type { Context } from '../../context.js';

/** Asks for delivery `deliveryId` (lower case) again and waits until the read models show it. */
export async function redeliver(ctx: Context, deliveryId: string) {
  const result = await handleCommand(ctx.events, streams.delivery(deliveryId), redeliverDecider, { type: 'Redeliver', deliveryId, at: ctx.now() });
  await ctx.sync.waitFor(result.position);
  return result;
}
