import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { startServer, type TestServer } from '../support/server.js';
import { teamDoc } from '../support/fixtures.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { eventually } from '../support/wait.js';

describe('a finished call reaches the service webhook', () => {
  let s: TestServer;
  let receiver: Receiver;
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  beforeAll(async () => {
    receiver = await startReceiver();
    s = await startServer({ SIM_ANSWER_MS: '20' });
    const doc = teamDoc();
    doc.services[0].webhook = { url: `${receiver.url}/hook`, secret };
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: doc })).status).toBe(200);
    await s.api('/api/v1/agents?status=0&agent-number=9100001001', { method: 'PATCH' });
  });
  afterAll(async () => {
    await s.stop();
    await receiver.close();
  });

  it('POSTs the signed webhook record with every field of the spec', async () => {
    const { id } = await (await s.api('/api/v1/calls', { method: 'POST', form: { number: '9876543210' } })).json();
    await eventually(async () => (await s.platform.ctx.events.readStream(`call-${id}`)).some((e) => e.type === 'CallBridged'), 'bridged');
    await s.api('/api/v1/hangup', { method: 'POST', form: { xnid: id } });
    const got = await eventually(async () => receiver.received.find((r) => r.headers['webhook-id'] === id), 'the webhook');
    const record = new Webhook(secret).verify(got.body, got.headers) as Record<string, string>;
    expect(Object.keys(record).sort()).toEqual(
      ['callid', 'call-duration', 'agent-number', 'customer-number', 'end-time', 'start-time', 'recording-url', 'call-type', 'virtual-number', 'disposition'].sort(),
    );
    expect(record).toMatchObject({ callid: id, disposition: 'answered', 'call-type': 'outgoing', 'agent-number': '9100001001', 'customer-number': '9876543210', 'virtual-number': '8000000101' });
    expect(record['call-duration']).toMatch(/^\d+$/);
    expect((await fetch(record['recording-url']!)).status).toBe(200);
    // The receiver holds the POST before its answer reaches the sender, which records it delivered after.
    const delivered = await eventually(async () => {
      const list = await (await s.ops('/ops/v1/deliveries?svc-id=101&status=delivered')).json();
      return list.find((d: { callid?: string }) => d.callid === id);
    }, 'the delivery recorded as delivered');
    expect(delivered).toMatchObject({ kind: 'webhook', status: 'delivered' });
  });
});
