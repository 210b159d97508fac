/** The delivery worker on the BullMQ adapter (REDIS_URL), against a real local Redis. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { dropRedisKeys } from '../support/redis-keys.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { loadConfig } from '../../src/config.js';
import { createPlatform, type Platform } from '../../src/platform.js';
import { BullmqJobQueue } from '../../src/gateways/queue/bullmq.js';
import { exampleDoc, OPERATOR_TOKEN } from '../support/server.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { until } from '../support/until.js';

// null when no Redis answered at the start of the run (test/support/redis-global.ts): skipped.
const redisUrl = inject('redisUrl') ?? '';
const prefix = `cttest-e2e-${process.pid}-${Date.now().toString(36)}`;
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

describe.skipIf(!redisUrl)('webhooks on BullMQ', () => {
  let platform: Platform;
  let url: string;
  let rx: Receiver;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'ct-e2e-bull-'));
  const ops = (p: string, init: RequestInit = {}) =>
    fetch(url + p, { ...init, headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json', ...(init.headers as object) } });

  beforeAll(async () => {
    rx = await startReceiver((r) => (rx.received.filter((x) => x.headers['webhook-id'] === r.headers['webhook-id']).length === 1 ? 500 : 200));
    const config = loadConfig({
      PORT: '0', SOCKET_PORT: '0', DATA_DIR: dataDir, OPERATOR_TOKEN, RATE_LIMIT_RPS: '0', WEBHOOK_ALLOW_PRIVATE: 'true', LOG_LEVEL: 'silent',
      REDIS_URL: redisUrl, WEBHOOK_RETRY_MS: '50,100',
    });
    platform = await createPlatform(config, { logger: pino({ level: 'silent' }), queue: new BullmqJobQueue(redisUrl, { prefix }) });
    url = (await platform.start()).httpUrl!;
    const doc = exampleDoc();
    doc.services[0].webhook = { url: `${rx.url}/hook`, secret: SECRET };
    expect((await ops('/ops/v1/provisioning', { method: 'PUT', body: JSON.stringify(doc) })).status).toBe(200);
  });
  afterAll(async () => {
    await platform?.stop();
    await rx.close();
    rmSync(dataDir, { recursive: true, force: true });
    await dropRedisKeys(redisUrl, `${prefix}*`);
  });

  it('delivers a signed webhook, retrying once', async () => {
    const xnid = randomUUID();
    const record = { callid: xnid, 'call-duration': '5', 'agent-number': '', 'customer-number': '9876543210', 'end-time': '2024-05-01 10:00:05', 'start-time': '2024-05-01 10:00:00', 'call-type': 'outgoing', 'virtual-number': '8000000101', disposition: 'missed' };
    await platform.ctx.events.appendToStream(`call-${xnid}`, [
      { type: 'CallEnded', data: { xnid, svcId: 101, direction: 'Outbound', disposition: 'missed', startTime: 0, endTime: 5000, durationS: 5, agentId: null, agentNumber: '', customerNumber: '9876543210', recordingUrl: null, webhook: record } },
    ]);
    const d = await until(async () => ((await (await ops('/ops/v1/deliveries?svc-id=101&status=delivered')).json()) as any[]).find((x) => x.callid === xnid), 'delivered');
    expect(d.attempts.map((a: any) => a.statusCode)).toEqual([500, 200]);
    const last = rx.received.filter((r) => r.headers['webhook-id'] === xnid).at(-1)!;
    expect(new Webhook(SECRET).verify(last.body, last.headers)).toEqual(record);
  });
});
