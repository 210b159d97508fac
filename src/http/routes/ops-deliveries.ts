/** Operator view of webhook and subscriber deliveries, and redelivery of failed ones (CONTRACT sections 3, 11). */
import type { RouteRegistrar } from '../route.js';
import { defineRoute } from '../route.js';
import { TRUE, json, arrayOf, deliverySchema } from '../answers.js';
import { redeliver } from '../../commands/delivery/redeliver.js';
import { notFound } from '../../domain/errors.js';
import type { DeliveryStatus } from '../../commands/delivery/delivery.js';
import { deliveriesOf } from '../../queries/deliveries.js';
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
      const docs = await deliveriesOf(ctx, p['svc-id'], p.status as DeliveryStatus | undefined, p.limit ?? 1000);
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
      await redeliver(ctx, id.toLowerCase());
      return true;
    },
  });
};
