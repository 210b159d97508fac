/** Read model `deliveries`: each webhook / subscriber delivery with its status and attempts, by delivery id. */
import { DELIVERY_EVENT_TYPES, type DeliveryAttemptedData, type DeliveryRequestedData, type DeliveryStatus } from '../commands/delivery/delivery.js';
import { projection, type Projection } from './projection.js';

export type DeliveryAttemptDoc = Pick<DeliveryAttemptedData, 'at' | 'statusCode' | 'error'>;

export interface DeliveryDoc extends Pick<DeliveryRequestedData, 'kind' | 'svcId' | 'url' | 'callid' | 'eventId'>, Record<string, unknown> {
  /** The delivery id. */
  id: string;
  status: DeliveryStatus;
  attempts: DeliveryAttemptDoc[];
  /** Epoch ms of the request; for ordering. */
  createdAt: number;
}

export const deliveriesProjection: Projection<DeliveryDoc> = projection({
  name: 'deliveries',
  canHandle: DELIVERY_EVENT_TYPES,
  keys: (e) => [e.data.deliveryId],
  evolve: (doc, e) => {
    if (e.type === 'DeliveryRequested') {
      if (doc) return doc;
      const d = e.data;
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
        const a = e.data;
        // A successful attempt delivers (older logs follow it with DeliverySucceeded, which changes nothing more).
        return { ...doc, attempts: [...doc.attempts, { at: a.at, statusCode: a.statusCode, error: a.error }], ...(a.error === null ? { status: 'delivered' as const } : {}) };
      }
      case 'DeliverySucceeded':
        return { ...doc, status: 'delivered' };
      case 'DeliveryFailed':
        return { ...doc, status: 'failed' };
      case 'DeliveryRedeliveryRequested':
        return { ...doc, status: 'pending' };
    }
  },
});
