/** Reads of the deliveries read model (webhooks and subscribers). */
import type { Context } from '../context.js';
import type { Scalar } from '../gateways/read-store/port.js';
import type { DeliveryDoc } from '../projections/deliveries.js';
import type { DeliveryStatus } from '../commands/delivery/delivery.js';

/** Service `svcId`'s deliveries, newest first, at most `limit`; only those in `status` when given. */
export function deliveriesOf(ctx: Context, svcId: number, status: DeliveryStatus | undefined, limit: number): Promise<DeliveryDoc[]> {
  const where: Record<string, Scalar> = { svcId };
  if (status) where.status = status;
  return ctx.reads.find<DeliveryDoc>('deliveries', where, { orderBy: { field: 'createdAt', direction: 'desc' }, limit });
}
