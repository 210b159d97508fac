/**
 * The KurrentDB adapter against what the server's sources (KurrentDB 25.1) say it does, which the
 * gRPC double now does too (test/support/kurrentdb-double.ts): reads of $all start only at event
 * positions; `any` appends are idempotent only while their ids are in the server's cache of recent
 * ids (a restart empties it); a multi-stream append's streams are compared ignoring case; one that
 * mixes streams already holding their events with new ones fails.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { KurrentDbEventStore } from '../../src/gateways/event-store/kurrentdb.js';
import { StreamCaseError } from '../../src/gateways/event-store/kurrentdb-mapping.js';
import { streams } from '../../src/domain/streams.js';
import { requestAppends } from '../../src/workers/delivery/planner.js';
import type { DeliveryRequestedData } from '../../src/commands/delivery/delivery.js';
import { KurrentDbDouble } from '../support/kurrentdb-double.js';

let open: { store: KurrentDbEventStore; double: KurrentDbDouble }[] = [];
async function onDouble() {
  const double = new KurrentDbDouble();
  const store = await KurrentDbEventStore.connect(await double.start(), { appendAttempts: 4 });
  open.push({ store, double });
  return { store, double };
}
afterEach(async () => {
  for (const { store, double } of open.splice(0)) {
    await store.close();
    await double.stop();
  }
});

const request = (deliveryId: string): DeliveryRequestedData => ({
  deliveryId,
  kind: 'webhook',
  svcId: 101,
  url: 'https://example.com/hook',
  callid: 'c1',
  webhookId: 'c1',
  body: '{}',
  at: 1_700_000_000_000,
});

describe('KurrentDB server rules', () => {
  it('reads $all only from event positions: the double refuses any other, as the server does', async () => {
    const { store } = await onDouble();
    const r = await store.appendToStream('s-1', [{ type: 'A', data: { pad: 'x'.repeat(50) } }]);
    expect((await store.readAll({ after: r.position })).length).toBe(0);
    await expect(store.readAll({ after: r.position - 1 })).rejects.toThrow();
  });

  it("stores an `any` append's events again after a restart emptied the recent-id cache; the planner's expected revisions do not", async () => {
    const { store, double } = await onDouble();
    const id = randomUUID();
    await store.appendToStream('s-any', [{ type: 'A', data: {}, id }]);
    await store.appendToStream('s-any', [{ type: 'A', data: {}, id }]);
    expect(await store.readStream('s-any')).toHaveLength(1);
    double.forgetRecentIds();
    await store.appendToStream('s-any', [{ type: 'A', data: {}, id }]);
    // What the server does with `any` across a restart: the delivery planner must not rely on it.
    expect(await store.readStream('s-any')).toHaveLength(2);

    const [a, b] = [randomUUID(), randomUUID()];
    await store.appendToStreams(requestAppends([request(a)]));
    double.forgetRecentIds();
    // A replay after the restart: one delivery already requested, one new (a mixed append).
    const results = await store.appendToStreams(requestAppends([request(a), request(b)]));
    expect(results.map((r) => r.nextExpectedRevision)).toEqual([0, 0]);
    for (const d of [a, b]) expect((await store.readStream(streams.delivery(d))).map((e) => e.type)).toEqual(['DeliveryRequested']);
  });

  it('a conflict on a stream that already holds its events is a replay: the other streams are stored, no conflict is reported on them', async () => {
    const { store } = await onDouble();
    const stored = randomUUID();
    await store.appendToStream('mix-a', [{ type: 'First', data: {} }]);
    await store.appendToStream('mix-a', [{ type: 'Again', data: {}, id: stored }]);
    // Expected no_stream on mix-a: the server answers a revision conflict there (its events are not at revision 0).
    const results = await store.appendToStreams([
      { streamId: 'mix-a', events: [{ type: 'Again', data: {}, id: stored }], expectedRevision: 'no_stream' },
      { streamId: 'mix-b', events: [{ type: 'New', data: {} }], expectedRevision: 'no_stream' },
    ]);
    expect(results.map((r) => r.nextExpectedRevision)).toEqual([1, 0]);
    expect((await store.readStream('mix-a')).map((e) => e.type)).toEqual(['First', 'Again']);
    expect((await store.readStream('mix-b')).map((e) => e.type)).toEqual(['New']);
  });

  it('refuses, before sending, streams that differ only in case; the platform never names one so', async () => {
    const { store, double } = await onDouble();
    const before = double.calls.appendSession;
    const started = Date.now();
    await expect(
      store.appendToStreams([
        { streamId: 'call-ABC', events: [{ type: 'A', data: {} }], expectedRevision: 'any' },
        { streamId: 'call-abc', events: [{ type: 'B', data: {} }], expectedRevision: 'any' },
      ]),
    ).rejects.toBeInstanceOf(StreamCaseError);
    // Not sent and retried as a timeout (the client reads the server's refusal as one) until a 503.
    expect(double.calls.appendSession).toBe(before);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(streams.call('0190A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5B')).toBe(streams.call('0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b'));
    expect(streams.delivery('ABC')).toBe('delivery-abc');
    expect(streams.sms('X1')).toBe(streams.sms('x1'));
  });
});
