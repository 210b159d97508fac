/** The delivery worker (role `worker`): plans deliveries from the log and runs their jobs. */
import type { Context } from '../../context.js';
import type { HttpPoster } from '../../gateways/http-delivery/post.js';
import { DeliveryPlanner } from './planner.js';
import { DELIVERY_QUEUE, deliveryHandler, type DeliveryJob } from './sender.js';

/**
 * Delivery jobs running at once per worker process. Attempts are I/O, so slots are cheap; each
 * receiver gets at most PER_RECEIVER_CONCURRENCY of them (sender.ts), so a receiver that hangs
 * cannot hold up the others.
 */
export const DELIVERY_CONCURRENCY = 256;

export interface DeliveryWorker {
  stop(): Promise<void>;
}

export async function startDeliveryWorker(ctx: Context, options: { post?: HttpPoster } = {}): Promise<DeliveryWorker> {
  ctx.queue.process<DeliveryJob>(DELIVERY_QUEUE, deliveryHandler(ctx, options.post), { concurrency: DELIVERY_CONCURRENCY });
  const planner = new DeliveryPlanner(ctx);
  await planner.start();
  return {
    // Running jobs finish when the queue closes (after this), so their attempts are recorded.
    stop: () => planner.stop(),
  };
}
