/**
 * Time-ordered delivery ids begin where the log says (id-order.ts): a call ended before them, whose
 * delivery an earlier version requested with a v5 id and whose planner checkpoint never moved past it
 * (a crash), is planned again on the same v5 id, so it is not asked for twice; calls ended after get
 * ids in their own time.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleDoc, startServer, type TestServer } from '../support/server.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { until } from '../support/until.js';
import { SqliteEventStore } from '../../src/gateways/event-store/sqlite.js';
import { applyProvisioning } from '../../src/commands/provisioning/provision.js';
import { deliveryIds, type DeliveryRequestedData } from '../../src/commands/delivery/delivery.js';
import type { CallEndedData, WebhookRecord } from '../../src/domain/call-events.js';
import { ID_ORDER_STREAM } from '../../src/workers/delivery/id-order.js';
import { streams } from '../../src/domain/streams.js';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

function callEnded(xnid: string): CallEndedData {
  const webhook: WebhookRecord = {
    callid: xnid, 'call-duration': '1', 'agent-number': '', 'customer-number': '9876543210', 'end-time': '2024-05-01 10:00:01',
    'start-time': '2024-05-01 10:00:00', 'call-type': 'outgoing', 'virtual-number': '8000000101', disposition: 'answered',
  };
  return { xnid, svcId: 101, direction: 'Outbound', disposition: 'answered', startTime: 0, endTime: 1000, durationS: 1, agentId: null, agentNumber: '', customerNumber: '9876543210', recordingUrl: null, webhook };
}

describe('time-ordered delivery ids after an upgrade', () => {
  let rx: Receiver;
  let s: TestServer;
  let dataDir: string;
  const before = randomUUID();
  let beforeId = '';

  beforeAll(async () => {
    rx = await startReceiver();
    dataDir = mkdtempSync(path.join(tmpdir(), 'ct-id-order-'));
    // What an earlier version left: the call's end, and the delivery it requested for it with a v5 id.
    const events = new SqliteEventStore(path.join(dataDir, 'events.db'));
    const doc = exampleDoc();
    doc.services[0].webhook = { url: `${rx.url}/hook`, secret: SECRET };
    await applyProvisioning(events, doc);
    await events.appendToStream(streams.call(before), [{ type: 'CallEnded', data: callEnded(before) }]);
    const ended = (await events.readStream(streams.call(before)))[0]!;
    expect(ended.id[14]).toBe('7'); // the log's own ids are time-ordered: the cause would give its time
    beforeId = deliveryIds.webhook(ended.id);
    const data: DeliveryRequestedData = {
      deliveryId: beforeId, kind: 'webhook', svcId: 101, url: `${rx.url}/hook`, callid: before, webhookId: before, body: JSON.stringify(callEnded(before).webhook), at: ended.time,
    };
    await events.appendToStream(streams.delivery(beforeId), [{ type: 'DeliveryRequested', data, id: deliveryIds.requestedEvent(beforeId) }]);
    await events.close();
    s = await startServer({ WEBHOOK_ALLOW_PRIVATE: 'true' }, { dataDir });
  });
  afterAll(async () => {
    await s?.stop({ keepData: true });
    await rx.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const deliveriesOf = async (callid: string) => ((await (await s.ops('/ops/v1/deliveries?svc-id=101')).json()) as { id: string; callid?: string; status: string }[]).filter((d) => d.callid === callid);

  it('replays the earlier call on its v5 id (one delivery, one POST) and gives a later call an id in its time', async () => {
    await until(async () => (await deliveriesOf(before))[0]?.status === 'delivered', 'the earlier delivery delivered');
    const after = randomUUID();
    await s.platform.ctx.events.appendToStream(streams.call(after), [{ type: 'CallEnded', data: callEnded(after) }]);
    await until(async () => (await deliveriesOf(after))[0]?.status === 'delivered', 'the later delivery delivered');

    // The planner saw the earlier call again (its checkpoint was never stored) and asked for nothing new.
    expect((await deliveriesOf(before)).map((d) => d.id)).toEqual([beforeId]);
    expect(rx.received.filter((r) => r.headers['webhook-id'] === before)).toHaveLength(1);
    const [marker] = await s.platform.ctx.events.readStream(ID_ORDER_STREAM);
    expect(marker).toMatchObject({ type: 'DeliveryIdsOrdered' });
    const ended = (await s.platform.ctx.events.readStream(streams.call(after)))[0]!;
    expect(ended.position).toBeGreaterThanOrEqual((marker!.data as { from: number }).from);
    const [later] = await deliveriesOf(after);
    expect(later!.id).toBe(deliveryIds.webhook(ended.id, true));
    expect(later!.id.slice(0, 13)).toBe(ended.id.slice(0, 13));
    expect(later!.id[14]).toBe('8');
  });
});
