/** Operator view of webhook and subscriber deliveries, and redelivery of failed ones (CONTRACT sections 3, 11). */
import type { RouteRegistrar } from '../route.js';
import { defineRoute } from '../route.js';
import { TRUE, json, arrayOf, deliverySchema } from '../answers.js';
import { handleCommand } from '../../commands/decider.js';
import { redeliverDecider } from '../../commands/delivery/delivery.js';
import { streams } from '../../domain/streams.js';
import { notFound } from '../../domain/errors.js';
import type { Scalar } from '../../gateways/read-store/port.js';
import type { DeliveryDoc } from '../../projections/deliveries.js';

/** What the operator sees of a delivery: exactly the contract's fields. */
export function deliveryView(d: DeliveryDoc) {
  return {
    id: d.id,
    kind: d.kind,
    svcId: d.svcId,
    url: d.url,
    ...(d.kind === 'webhook' ? { callid: d.callid ?? null } : { eventId: d.eventId ?? null }),
    status: d.status,
    attempts: d.attempts.map((a) => ({ at: a.at, statusCode: a.statusCode, error: a.error })),
  };
}

export const deliveriesRoutes: RouteRegistrar = (app, ctx) => {
  defineRoute(app, ctx, {
    method: 'GET',
    url: '/ops/v1/deliveries',
    summary: 'Webhook and subscriber deliveries of a service with their attempts, newest first',
    tags: ['operator'],
    auth: 'operator',
    response: json(arrayOf(deliverySchema)),
    params: {
      'svc-id': { type: 'integer', required: true, min: 1 },
      status: { type: 'string', enum: ['pending', 'delivered', 'failed'] },
      limit: { type: 'integer', min: 1, max: 10_000, description: 'most deliveries answered (default 1000)' },
    },
    handler: async ({ p }) => {
      await ctx.sync.caughtUp();
      const where: Record<string, Scalar> = { svcId: p['svc-id'] };
      if (p.status) where.status = p.status;
      const docs = await ctx.reads.find<DeliveryDoc>('deliveries', where, { orderBy: { field: 'createdAt', direction: 'desc' }, limit: p.limit ?? 1000 });
      return docs.map(deliveryView);
    },
  });

  defineRoute(app, ctx, {
    method: 'POST',
    url: '/ops/v1/deliveries/:id/redeliver',
    summary: 'Try a failed delivery again, with the full retry schedule',
    tags: ['operator'],
    auth: 'operator',
    response: TRUE,
    pathParams: { id: { type: 'string', required: true, maxLength: 100 } },
    handler: async ({ req }) => {
      const id = (req.params as { id: string }).id;
      if (!/^[0-9a-f-]{36}$/i.test(id)) throw notFound(`no delivery ${id}`);
      const result = await handleCommand(ctx.events, streams.delivery(id.toLowerCase()), redeliverDecider, { type: 'Redeliver', deliveryId: id.toLowerCase(), at: ctx.now() });
      await ctx.sync.waitFor(result.position);
      return true;
    },
  });
};
