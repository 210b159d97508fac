/** Webhook deliveries end to end: CallEnded events in, signed POSTs to a real local receiver out. */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { exampleDoc, startProvisioned, startServer, type TestServer } from '../support/server.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { until } from '../support/until.js';
import type { CallEndedData, WebhookRecord } from '../../src/domain/call-events.js';
import { DeliveryPlanner } from '../../src/workers/delivery/planner.js';
import { deliverySender } from '../../src/workers/delivery/sender.js';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

function record(xnid: string, extra: Partial<WebhookRecord> = {}): WebhookRecord {
  return {
    callid: xnid,
    'call-duration': '42',
    'agent-number': '9100001001',
    'customer-number': '9876543210',
    'end-time': '2024-05-01 10:00:42',
    'start-time': '2024-05-01 10:00:00',
    'recording-url': `http://127.0.0.1:8080/recordings/${xnid}`,
    'call-type': 'incoming',
    'virtual-number': '8000000101',
    disposition: 'answered',
    ...extra,
  };
}

/** Appends a CallEnded as the call aggregate would; returns the callid. */
async function endCall(s: TestServer, opts: { svcId?: number; webhook?: WebhookRecord | null } = {}): Promise<string> {
  const xnid = randomUUID();
  const data: CallEndedData = {
    xnid,
    svcId: opts.svcId ?? 101,
    direction: 'Inbound',
    disposition: 'answered',
    startTime: Date.now() - 42_000,
    endTime: Date.now(),
    durationS: 42,
    agentId: 1001,
    agentNumber: '9100001001',
    customerNumber: '9876543210',
    recordingUrl: null,
    webhook: opts.webhook === undefined ? record(xnid) : opts.webhook,
  };
  await s.platform.ctx.events.appendToStream(`call-${xnid}`, [{ type: 'CallEnded', data }]);
  return xnid;
}

async function provisionWebhook(s: TestServer, url: string | null) {
  const doc = exampleDoc();
  doc.services[0].webhook = url === null ? null : { url, secret: SECRET };
  const res = await s.ops('/ops/v1/provisioning', { method: 'PUT', json: doc });
  expect(res.status).toBe(200);
}

async function deliveries(s: TestServer, query = 'svc-id=101') {
  const res = await s.ops(`/ops/v1/deliveries?${query}`);
  expect(res.status).toBe(200);
  return (await res.json()) as any[];
}

async function deliveryOf(s: TestServer, callid: string, status?: string) {
  return until(async () => (await deliveries(s)).find((d) => d.callid === callid && (!status || d.status === status)), `delivery of ${callid} ${status ?? ''}`);
}

describe('webhooks', () => {
  let s: TestServer;
  let rx: Receiver;
  beforeAll(async () => {
    rx = await startReceiver();
    s = await startProvisioned({ WEBHOOK_RETRY_MS: '50,100,200', WEBHOOK_TIMEOUT_MS: '300' });
    await provisionWebhook(s, `${rx.url}/hook`);
  });
  afterEach(() => {
    rx.respond = () => 200;
  });
  afterAll(async () => {
    await s.stop();
    await rx.close();
  });

  it('POSTs the webhook record, signed per Standard Webhooks (verified independently), and lists it delivered', async () => {
    const callid = await endCall(s);
    const got = await until(() => rx.received.find((r) => r.headers['webhook-id'] === callid), 'the webhook');
    expect(got.path).toBe('/hook');
    expect(got.headers['content-type']).toBe('application/json');
    expect(Math.abs(Number(got.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(30);
    expect(got.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    const verified = new Webhook(SECRET).verify(got.body, got.headers);
    expect(verified).toEqual(record(callid));
    // A tampered body fails verification: the signature covers it.
    expect(() => new Webhook(SECRET).verify(got.body.replace('42', '43'), got.headers)).toThrow();

    const d = await deliveryOf(s, callid, 'delivered');
    expect(Object.keys(d).sort()).toEqual(['attempts', 'callid', 'id', 'kind', 'status', 'svcId', 'url']);
    expect(d).toMatchObject({ kind: 'webhook', svcId: 101, url: `${rx.url}/hook`, callid, status: 'delivered' });
    expect(d.attempts).toEqual([{ at: expect.any(Number), statusCode: 200, error: null }]);
    expect(d.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(await deliveries(s, 'svc-id=101&status=failed')).not.toContainEqual(expect.objectContaining({ callid }));
  });

  it('a receiver failing twice gets the record on the third attempt, after the retry delays', async () => {
    rx.respond = (r) => (rx.received.filter((x) => x.headers['webhook-id'] === r.headers['webhook-id']).length <= 2 ? 503 : 200);
    const callid = await endCall(s);
    const d = await deliveryOf(s, callid, 'delivered');
    const tries = rx.received.filter((r) => r.headers['webhook-id'] === callid);
    expect(tries).toHaveLength(3);
    expect(tries[1]!.at - tries[0]!.at).toBeGreaterThanOrEqual(45);
    expect(tries[2]!.at - tries[1]!.at).toBeGreaterThanOrEqual(95);
    expect(d.attempts.map((a: any) => [a.statusCode, a.error])).toEqual([
      [503, 'receiver answered HTTP 503'],
      [503, 'receiver answered HTTP 503'],
      [200, null],
    ]);
    // Every attempt carries the same id (receivers dedupe by it) and a valid signature.
    for (const t of tries) expect(new Webhook(SECRET).verify(t.body, t.headers)).toEqual(record(callid));
  });

  it('makes a first attempt on the state the planner remembered (no read of the delivery stream); a retry reads it', async () => {
    const events = s.platform.ctx.events as { readStream: (id: string, o?: object) => Promise<unknown[]> };
    const read = events.readStream;
    const reads: string[] = [];
    // Set on the store itself (ctx.events is a proxy without a set trap), so every reader goes through it.
    events.readStream = (id, o) => {
      if (id.startsWith('delivery-')) reads.push(id);
      return read(id, o);
    };
    try {
      const first = await endCall(s);
      await deliveryOf(s, first, 'delivered');
      expect(reads).toEqual([]);
      rx.respond = (r) => (rx.received.filter((x) => x.headers['webhook-id'] === r.headers['webhook-id']).length === 1 ? 503 : 200);
      const retried = await endCall(s);
      const d = await deliveryOf(s, retried, 'delivered');
      expect(d.attempts.map((a: any) => a.statusCode)).toEqual([503, 200]);
      expect(reads).toEqual([`delivery-${d.id}`]);
    } finally {
      delete (events as { readStream?: unknown }).readStream;
    }
  });

  it('a receiver down past the schedule ends failed; redeliver tries again and delivers', async () => {
    rx.respond = () => 500;
    const callid = await endCall(s);
    const failed = await deliveryOf(s, callid, 'failed');
    expect(failed.attempts).toHaveLength(4);
    expect(rx.received.filter((r) => r.headers['webhook-id'] === callid)).toHaveLength(4);
    expect(await deliveries(s, 'svc-id=101&status=failed')).toContainEqual(expect.objectContaining({ id: failed.id }));

    rx.respond = () => 204;
    const res = await s.ops(`/ops/v1/deliveries/${failed.id}/redeliver`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(await res.json()).toBe(true);
    const d = await deliveryOf(s, callid, 'delivered');
    expect(d.attempts).toHaveLength(5);
    expect(d.attempts[4]).toMatchObject({ statusCode: 204, error: null });

    // Only a failed delivery can be redelivered; unknown ids are 404.
    const again = await s.ops(`/ops/v1/deliveries/${failed.id}/redeliver`, { method: 'POST' });
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ isError: true, code: 'CONFLICT' });
    expect((await s.ops(`/ops/v1/deliveries/${randomUUID()}/redeliver`, { method: 'POST' })).status).toBe(404);
    expect((await s.ops(`/ops/v1/deliveries/nope/redeliver`, { method: 'POST' })).status).toBe(404);
  });

  it('an attempt over WEBHOOK_TIMEOUT_MS counts as failed and is retried', async () => {
    rx.respond = (r) => (rx.received.filter((x) => x.headers['webhook-id'] === r.headers['webhook-id']).length === 1 ? 'hang' : 200);
    const callid = await endCall(s);
    const d = await deliveryOf(s, callid, 'delivered');
    expect(d.attempts[0]).toMatchObject({ statusCode: null, error: 'timed out after 300 ms' });
    expect(d.attempts[1]).toMatchObject({ statusCode: 200 });
  });

  it('a webhook removed after its delivery was requested: the next attempt posts nothing and fails the delivery at once', async () => {
    rx.respond = () => 'hang';
    const callid = await endCall(s);
    try {
      // The first attempt hangs until its time limit: the webhook goes meanwhile.
      await until(() => rx.received.some((r) => r.headers['webhook-id'] === callid), 'the first attempt');
      await provisionWebhook(s, null);
      const d = await deliveryOf(s, callid, 'failed');
      const posts = rx.received.filter((r) => r.headers['webhook-id'] === callid).length;
      expect(d.attempts.at(-1)).toMatchObject({ statusCode: null, error: 'service 101 has no webhook any more' });
      expect(d.attempts.slice(0, -1).every((a: any) => a.error === 'timed out after 300 ms')).toBe(true);
      expect(d.attempts).toHaveLength(posts + 1);
    } finally {
      await provisionWebhook(s, `${rx.url}/hook`);
    }
  });

  it('sends nothing for a call without a webhook record, and nothing when the service has no webhook', async () => {
    const none = await endCall(s, { webhook: null });
    await provisionWebhook(s, null);
    const noHook = await endCall(s);
    await provisionWebhook(s, `${rx.url}/hook`);
    const marker = await endCall(s);
    await deliveryOf(s, marker, 'delivered');
    const ids = rx.received.map((r) => r.headers['webhook-id']);
    expect(ids).not.toContain(none);
    expect(ids).not.toContain(noHook);
    expect((await deliveries(s)).map((d) => d.callid)).not.toContain(noHook);
  });

  it('replaying the log (a planner from position 0) and restarting create no second delivery', async () => {
    const callid = await endCall(s);
    await deliveryOf(s, callid, 'delivered');
    const before = await deliveries(s);
    // A planner that believes it never ran: it sees every CallEnded and DeliveryRequested again.
    const reads = Object.assign(Object.create(s.platform.ctx.reads), { checkpoint: async () => 0, commit: async () => {} });
    const ctx = { ...s.platform.ctx, reads };
    const replay = new DeliveryPlanner(ctx, deliverySender(ctx));
    await replay.start();
    const marker = await endCall(s);
    await deliveryOf(s, marker, 'delivered');
    const head = await s.platform.ctx.events.headPosition();
    await until(() => replay.position >= head, 'the replaying planner to catch up');
    await replay.stop();
    expect(rx.received.filter((r) => r.headers['webhook-id'] === callid)).toHaveLength(1);
    // No call has two deliveries, and every earlier delivery is still the same one.
    const after = await deliveries(s);
    const callids = after.map((d) => d.callid);
    expect(new Set(callids).size).toBe(callids.length);
    for (const d of before) expect(after.find((x) => x.callid === d.callid)?.id).toBe(d.id);
  });

  it('operator only: customer credentials get 401; svc-id is required', async () => {
    expect((await s.ops('/ops/v1/deliveries?svc-id=101', { headers: { authorization: 'Basic YWNtZS1hZG1pbjpzM2NyZXQtYWRtaW4=' } })).status).toBe(401);
    expect((await s.ops('/ops/v1/deliveries')).status).toBe(400);
    expect((await s.ops('/ops/v1/deliveries?svc-id=101&status=weird')).status).toBe(400);
  });
});

describe('webhooks across a restart', () => {
  it('a delivery pending at shutdown is completed after the restart, and a delivered one is not sent again', async () => {
    const rx = await startReceiver(() => 500);
    let s = await startProvisioned({ WEBHOOK_RETRY_MS: '50,200,5000' });
    const dataDir = s.dataDir;
    try {
      await provisionWebhook(s, `${rx.url}/hook`);
      rx.respond = () => 200;
      const delivered = await endCall(s);
      await deliveryOf(s, delivered, 'delivered');
      rx.respond = () => 500;
      const pending = await endCall(s);
      await until(() => rx.received.filter((r) => r.headers['webhook-id'] === pending).length >= 2, 'two failed attempts');
      await s.stop({ keepData: true });
      rx.respond = () => 200;
      s = await startServer({ WEBHOOK_RETRY_MS: '50,200,5000' }, { dataDir });
      const d = await deliveryOf(s, pending, 'delivered');
      expect(d.attempts.at(-1)).toMatchObject({ statusCode: 200 });
      const marker = await endCall(s);
      await deliveryOf(s, marker, 'delivered');
      expect(rx.received.filter((r) => r.headers['webhook-id'] === delivered)).toHaveLength(1);
    } finally {
      await s.stop({ keepData: true });
      await rx.close();
      (await import('node:fs')).rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('private targets', () => {
  let s: TestServer;
  let rx: Receiver;
  beforeAll(async () => {
    rx = await startReceiver();
    s = await startProvisioned({ WEBHOOK_ALLOW_PRIVATE: 'false', WEBHOOK_RETRY_MS: '10,10' });
  });
  afterAll(async () => {
    await s.stop();
    await rx.close();
  });

  it.each([
    ['an IPv4 loopback literal', (u: string) => `${u}/hook`],
    ['a name resolving to loopback', (u: string) => `${u.replace('127.0.0.1', 'localhost')}/hook`],
    ['an IPv4-mapped IPv6 loopback', (u: string) => `${u.replace('127.0.0.1', '[::ffff:127.0.0.1]')}/hook`],
  ])('refuses %s when WEBHOOK_ALLOW_PRIVATE=false: failed attempts with a clear error', async (_label, toUrl) => {
    await provisionWebhook(s, toUrl(rx.url));
    const callid = await endCall(s);
    const d = await deliveryOf(s, callid, 'failed');
    expect(d.attempts).toHaveLength(3);
    for (const a of d.attempts) {
      expect(a.statusCode).toBeNull();
      expect(a.error).toMatch(/^refused: .* non-public address \(WEBHOOK_ALLOW_PRIVATE=false\)$/);
    }
    expect(rx.received).toHaveLength(0);
  });
});
