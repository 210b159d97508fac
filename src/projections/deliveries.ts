/** Read model `deliveries`: each webhook / subscriber delivery with its status and attempts, by delivery id. */
import type { DeliveryAttemptedData, DeliveryKind, DeliveryRequestedData, DeliveryStatus } from '../commands/delivery/delivery.js';
import { DELIVERY_EVENT_TYPES } from '../commands/delivery/delivery.js';
import type { Projection } from './projection.js';

export interface DeliveryAttemptDoc {
  at: number;
  statusCode: number | null;
  error: string | null;
}

export interface DeliveryDoc extends Record<string, unknown> {
  id: string;
  kind: DeliveryKind;
  svcId: number;
  url: string;
  callid?: string;
  eventId?: string;
  status: DeliveryStatus;
  attempts: DeliveryAttemptDoc[];
  /** Epoch ms of the request; for ordering. */
  createdAt: number;
}

export const deliveriesProjection: Projection<DeliveryDoc> = {
  name: 'deliveries',
  keys: (e) => (DELIVERY_EVENT_TYPES.includes(e.type) ? [(e.data as { deliveryId: string }).deliveryId] : []),
  evolve: (doc, e) => {
    if (e.type === 'DeliveryRequested') {
      if (doc) return doc;
      const d = e.data as DeliveryRequestedData;
      return {
        id: d.deliveryId,
        kind: d.kind,
        svcId: d.svcId,
        url: d.url,
        ...(d.kind === 'webhook' ? { callid: d.callid } : { eventId: d.eventId }),
        status: 'pending',
        attempts: [],
        createdAt: d.at,
      };
    }
    if (!doc) return null;
    switch (e.type) {
      case 'DeliveryAttempted': {
        const a = e.data as DeliveryAttemptedData;
        return { ...doc, attempts: [...doc.attempts, { at: a.at, statusCode: a.statusCode, error: a.error }] };
      }
      case 'DeliverySucceeded':
        return { ...doc, status: 'delivered' };
      case 'DeliveryFailed':
        return { ...doc, status: 'failed' };
      case 'DeliveryRedeliveryRequested':
        return { ...doc, status: 'pending' };
      default:
        return doc;
    }
  },
};
