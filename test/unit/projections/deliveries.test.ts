/** Read model `deliveries`: a successful attempt delivers; an older log's DeliverySucceeded after it folds to the same document. */
import { describe, expect, it } from 'vitest';
import { deliveriesProjection, type DeliveryDoc } from '../../../src/projections/deliveries.js';
import type { RecordedEvent } from '../../../src/gateways/event-store/port.js';

let position = 0;
const recorded = (type: string, data: Record<string, unknown>): RecordedEvent => ({ id: `e${++position}`, streamId: 'delivery-d1', revision: 0, position, type, data, metadata: {}, time: 0 });
const requested = recorded('DeliveryRequested', { deliveryId: 'd1', kind: 'webhook', svcId: 101, url: 'https://hooks.test/x', callid: 'c1', webhookId: 'c1', body: '{}', at: 1_000 });
const attempted = (attempt: number, statusCode: number | null, error: string | null) => recorded('DeliveryAttempted', { deliveryId: 'd1', round: 0, attempt, at: 2_000 + attempt, statusCode, error });
const fold = (...events: RecordedEvent[]) => events.reduce<DeliveryDoc | null>((doc, e) => deliveriesProjection.evolve(doc, e, 'd1'), null);

describe('deliveries read model', () => {
  it('a failed attempt leaves the delivery pending; a successful one delivers it', () => {
    expect(fold(requested, attempted(1, 500, 'receiver answered HTTP 500'))).toMatchObject({ status: 'pending', attempts: [{ statusCode: 500 }] });
    expect(fold(requested, attempted(1, 500, 'receiver answered HTTP 500'), attempted(2, 204, null))).toEqual({
      id: 'd1',
      kind: 'webhook',
      svcId: 101,
      url: 'https://hooks.test/x',
      callid: 'c1',
      status: 'delivered',
      attempts: [
        { at: 2_001, statusCode: 500, error: 'receiver answered HTTP 500' },
        { at: 2_002, statusCode: 204, error: null },
      ],
      createdAt: 1_000,
    });
  });

  it('an older log, with DeliverySucceeded after the successful attempt, gives the same document', () => {
    const now = fold(requested, attempted(1, 204, null));
    const older = fold(requested, attempted(1, 204, null), recorded('DeliverySucceeded', { deliveryId: 'd1', round: 0, at: 2_001 }));
    expect(older).toEqual(now);
    expect(now?.status).toBe('delivered');
  });
});
