/** The delivery worker (role `worker`): plans deliveries from the log and runs their jobs. */
import type { Context } from '../../context.js';
import type { HttpPoster } from '../../gateways/http-delivery/post.js';
import { DeliveryPlanner } from './planner.js';
import { DELIVERY_QUEUE, deliveryHandler, type DeliveryJob } from './sender.js';

/** Deliveries in flight at once per worker process. */
export const DELIVERY_CONCURRENCY = 32;

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
