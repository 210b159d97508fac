/** Delivery deciders: each attempt recorded once per round, delivered or failed; the operator's redeliver. */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { attemptDecider, deliveryIds, redeliverDecider, type DeliveryEvent, type RecordAttemptCommand } from '../../../src/commands/delivery/delivery.js';
import { v5 as uuidv5 } from 'uuid';
import { deciderSpec } from '../../support/decider-spec.js';
import { timeOrderedId } from '../../../src/gateways/event-store/sqlite-group.js';

const requested: DeliveryEvent = {
  type: 'DeliveryRequested',
  data: { deliveryId: 'd1', kind: 'webhook', svcId: 101, url: 'https://hooks.test/x', callid: 'c1', webhookId: 'c1', body: '{}', at: 1_000 },
};
const record = (over: Partial<RecordAttemptCommand>): RecordAttemptCommand => ({ type: 'RecordAttempt', round: 0, attempt: 1, at: 2_000, statusCode: 200, error: null, last: false, ...over });
const attempted = (attempt: number, statusCode: number | null, error: string | null, round = 0, at = 2_000): DeliveryEvent => ({
  type: 'DeliveryAttempted',
  data: { deliveryId: 'd1', round, attempt, at, statusCode, error },
});
const failed: DeliveryEvent = { type: 'DeliveryFailed', data: { deliveryId: 'd1', round: 0, at: 3_000, error: 'HTTP 500' } };

describe('delivery attempts', () => {
  const { given } = deciderSpec(attemptDecider);

  it('a 2xx attempt delivers: the attempt alone records it', () => {
    const s = given(requested).when(record({})).then(attempted(1, 200, null));
    expect(s).toMatchObject({ status: 'delivered', attempts: 1 });
    given(requested, attempted(1, 200, null)).when(record({ attempt: 2 })).thenNothingHappened();
  });

  it('an older log\'s DeliverySucceeded after the successful attempt folds to the same state', () => {
    const s = given(requested, attempted(1, 500, 'x'), attempted(2, 200, null), { type: 'DeliverySucceeded', data: { deliveryId: 'd1', round: 0, at: 2_000 } })
      .when(record({ attempt: 3 }))
      .thenNothingHappened();
    expect(s).toMatchObject({ status: 'delivered', attempts: 2 });
  });

  it('a failed attempt is recorded and the round stays pending until its last attempt fails it', () => {
    expect(given(requested).when(record({ statusCode: 500, error: 'HTTP 500' })).then(attempted(1, 500, 'HTTP 500'))).toMatchObject({ status: 'pending', attempts: 1 });
    const s = given(requested, attempted(1, 500, 'HTTP 500'))
      .when(record({ attempt: 2, at: 3_000, statusCode: 500, error: 'HTTP 500', last: true }))
      .then(attempted(2, 500, 'HTTP 500', 0, 3_000), failed);
    expect(s.status).toBe('failed');
  });

  it('records nothing once the round is over, for another round, or for a delivery never requested', () => {
    given(requested, attempted(1, 500, 'x'), failed).when(record({ attempt: 2 })).thenNothingHappened();
    given(requested).when(record({ round: 1 })).thenNothingHappened();
    given().when(record({})).thenNothingHappened();
  });
});

describe('redeliver', () => {
  const { given } = deciderSpec(redeliverDecider);

  it('starts a new round of a failed delivery, whose attempts the attempt decider then records', () => {
    const redelivery: DeliveryEvent = { type: 'DeliveryRedeliveryRequested', data: { deliveryId: 'd1', round: 1, at: 9_000 } };
    expect(given(requested, attempted(1, 500, 'x'), failed).when({ type: 'Redeliver', deliveryId: 'd1', at: 9_000 }).then(redelivery)).toMatchObject({ status: 'pending', round: 1 });
    deciderSpec(attemptDecider).given(requested, attempted(1, 500, 'x'), failed, redelivery).when(record({ round: 1, at: 9_500 })).thenMatches({ type: 'DeliveryAttempted', data: { round: 1, error: null } });
  });

  it('refuses a delivery that is pending or delivered (409) and one that does not exist (404)', () => {
    given(requested).when({ type: 'Redeliver', deliveryId: 'd1', at: 9_000 }).thenThrows('CONFLICT', /pending/);
    given(requested, attempted(1, 200, null))
      .when({ type: 'Redeliver', deliveryId: 'd1', at: 9_000 })
      .thenThrows('CONFLICT', /delivered/);
    given().when({ type: 'Redeliver', deliveryId: 'nope', at: 9_000 }).thenThrows('NOT_FOUND');
  });

  it('ids derive from the causing event, so replaying it requests the same delivery', () => {
    expect(deliveryIds.webhook('e1')).toBe(deliveryIds.webhook('e1'));
    expect(deliveryIds.webhook('e1')).not.toBe(deliveryIds.webhook('e2'));
    const sub = { svcId: 101, agentId: 0, id: 's' };
    expect(deliveryIds.subscriber('e1', sub)).not.toBe(deliveryIds.subscriber('e1', { ...sub, agentId: 1 }));
    // The same ids as uuid's v5 in the delivery namespace, as logs written before hold.
    const ns = '5b0d7d0e-6a34-4c57-9a5e-5d1f5f2b7c11';
    expect(deliveryIds.webhook('6f1c2a34-0b1d-4c8e-9f00-1a2b3c4d5e6f')).toBe(uuidv5('webhook:6f1c2a34-0b1d-4c8e-9f00-1a2b3c4d5e6f', ns));
    expect(deliveryIds.requestedEvent('d1')).toBe(uuidv5('requested:d1', ns));
    for (const id of ['é', '日本', 'a😀b', '']) expect(deliveryIds.subscriber('e1', { ...sub, id })).toBe(uuidv5(`subscriber:e1:101:0:${id}`, ns));
    // Long names (past the reused buffer's size), and a short one after them.
    for (const id of ['x'.repeat(300), 'é'.repeat(2000), 's']) expect(deliveryIds.subscriber('e1', { ...sub, id })).toBe(uuidv5(`subscriber:e1:101:0:${id}`, ns));
    for (let i = 0; i < 50; i++) {
      const e = randomUUID();
      expect(deliveryIds.webhook(e)).toBe(uuidv5(`webhook:${e}`, ns));
    }
    expect(() => deliveryIds.subscriber('e1', { ...sub, id: 'x\uD800y' })).toThrow(URIError); // as uuid does
    expect(deliveryIds.job('d1', 0)).toBe('d1');
    expect(deliveryIds.job('d1', 2)).toBe('d1.r2');
  });

  it('ordered: the id starts with the causing event\'s time, so ids made together sort together; still derived from the event', () => {
    const ns = '5b0d7d0e-6a34-4c57-9a5e-5d1f5f2b7c11';
    const sub = { svcId: 101, agentId: 0, id: 's' };
    const at = (ms: number) => timeOrderedId(ms);
    const e1 = at(1_732_500_000_000);
    const id = deliveryIds.webhook(e1, true);
    expect(id).toBe(deliveryIds.webhook(e1, true));
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(id.slice(0, 13)).toBe(e1.slice(0, 13));
    // The rest is v5's hash of the same name: as unique as the v5 id.
    expect(id.slice(14 + 1)).toBe(uuidv5(`webhook:${e1}`, ns).slice(15));
    expect(deliveryIds.subscriber(e1, sub, true)).not.toBe(deliveryIds.subscriber(e1, { ...sub, agentId: 1 }, true));
    expect(deliveryIds.subscriber(e1, sub, true).slice(0, 13)).toBe(e1.slice(0, 13));
    // Later events, later ids: a run of deliveries appends to the end of an index on them.
    const ids = [0, 1, 2, 1000, 60_000].map((d) => deliveryIds.webhook(at(1_732_500_000_000 + d), true));
    expect([...ids].sort()).toEqual(ids);
    // Its DeliveryRequested event's id is in the same time; a v5 delivery's stays v5.
    expect(deliveryIds.requestedEvent(id).slice(0, 13)).toBe(e1.slice(0, 13));
    expect(deliveryIds.requestedEvent(id)[14]).toBe('8');
    expect(deliveryIds.requestedEvent(deliveryIds.webhook(e1))).toBe(uuidv5(`requested:${deliveryIds.webhook(e1)}`, ns));
    // Not ordered (planned before), or a cause without a time (a v4 id, a name): v5 as before.
    expect(deliveryIds.webhook(e1)).toBe(uuidv5(`webhook:${e1}`, ns));
    const v4 = randomUUID();
    expect(deliveryIds.webhook(v4, true)).toBe(uuidv5(`webhook:${v4}`, ns));
    expect(deliveryIds.webhook('e1', true)).toBe(uuidv5('webhook:e1', ns));
  });
});
