/** Reads of the subscribers read model. */
import type { Context } from '../context.js';
import type { SubscriberDoc } from '../projections/subscribers.js';

/** Service `svcId`'s subscribers by agent id; only agent `agentId`'s (0: the service-wide one) when given. */
export function subscribersOf(ctx: Context, svcId: number, agentId: number | undefined): Promise<SubscriberDoc[]> {
  const where: Record<string, number> = { svc_id: svcId };
  if (agentId !== undefined) where.agent_id = agentId;
  return ctx.reads.find<SubscriberDoc>('subscribers', where, { orderBy: { field: 'agent_id' } });
}
