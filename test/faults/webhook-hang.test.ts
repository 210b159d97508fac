/**
 * A webhook receiver that hangs on every request does not hold up anyone else's deliveries: with
 * more hanging deliveries in flight than the sender's concurrency, another service's receiver still
 * gets each record promptly.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { teamDoc } from '../support/fixtures.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { until } from '../support/until.js';
import type { CallEndedData } from '../../src/domain/call-events.js';
import { PER_RECEIVER_CONCURRENCY } from '../../src/workers/delivery/sender.js';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

async function endCall(s: TestServer, svcId: number): Promise<string> {
  const xnid = randomUUID();
  const now = Date.now();
  const data: CallEndedData = {
    xnid, svcId, direction: 'Inbound', disposition: 'missed', startTime: now - 1000, endTime: now, durationS: 1,
    agentId: null, agentNumber: '', customerNumber: '9876543210', recordingUrl: null,
    webhook: { callid: xnid, 'call-duration': '1', 'agent-number': '', 'customer-number': '9876543210', 'end-time': '', 'start-time': '', 'recording-url': '', 'call-type': 'incoming', 'virtual-number': '', disposition: 'missed' },
  };
  await s.platform.ctx.events.appendToStream(`call-${xnid}`, [{ type: 'CallEnded', data }]);
  return xnid;
}

describe('a hanging webhook receiver', () => {
  let s: TestServer;
  let hanging: Receiver;
  let healthy: Receiver;
  beforeAll(async () => {
    hanging = await startReceiver(() => 'hang');
    healthy = await startReceiver(() => 200);
    s = await startServer({ WEBHOOK_TIMEOUT_MS: '8000', WEBHOOK_RETRY_MS: '60000' });
    const doc = teamDoc();
    doc.services[0].webhook = { url: `${hanging.url}/hook`, secret: SECRET };
    doc.services[1].webhook = { url: `${healthy.url}/hook`, secret: SECRET };
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: doc })).status).toBe(200);
  });
  afterAll(async () => {
    await s.stop();
    await hanging.close();
    await healthy.close();
  });

  it('keeps delivering to others on time while it hangs', async () => {
    // More hanging deliveries than one receiver may hold at once, and than the old fixed pool of 32.
    const stuck = PER_RECEIVER_CONCURRENCY * 3;
    for (let i = 0; i < stuck; i++) await endCall(s, 101);
    await until(() => hanging.received.length >= Math.min(stuck, 8), 'the hanging receiver to be called');
    const latencies: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = Date.now();
      const xnid = await endCall(s, 202);
      await until(() => healthy.received.some((r) => r.headers['webhook-id'] === xnid), `delivery of ${xnid}`, 7000);
      latencies.push(Date.now() - t0);
    }
    // Each well inside the hanging receiver's 8 s attempt time limit.
    expect(Math.max(...latencies)).toBeLessThan(2000);
  }, 60_000);
});
