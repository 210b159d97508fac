/** The delivery worker (role `worker`): plans deliveries from the log and runs their jobs. */
import type { Context } from '../../context.js';
import type { HttpPoster } from '../../gateways/http-delivery/post.js';
import { DeliveryPlanner } from './planner.js';
import { DELIVERY_QUEUE, PER_RECEIVER_CONCURRENCY, deliverySender, type DeliveryJob } from './sender.js';

/**
 * Delivery jobs running at once per worker process. Attempts are I/O, so slots are cheap; each
 * receiver gets at most PER_RECEIVER_CONCURRENCY of them (sender.ts), a quarter, so a receiver that
 * hangs cannot hold up the others.
 */
export const DELIVERY_CONCURRENCY = 4 * PER_RECEIVER_CONCURRENCY;

export interface DeliveryWorker {
  stop(): Promise<void>;
}

export async function startDeliveryWorker(ctx: Context, options: { post?: HttpPoster } = {}): Promise<DeliveryWorker> {
  const sender = deliverySender(ctx, options.post);
  ctx.queue.process<DeliveryJob>(DELIVERY_QUEUE, sender.job, { concurrency: DELIVERY_CONCURRENCY });
  const planner = new DeliveryPlanner(ctx, sender);
  await planner.start();
  return {
    // First attempts end with the planner (it holds them); running jobs when the queue closes (after this).
    stop: () => planner.stop(),
  };
}
