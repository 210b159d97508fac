/**
 * The whole platform with MONGODB_URL set (as `MONGODB_URL=mongodb://... npm start` builds it),
 * pointed at the in-process MongoDB wire-protocol double: provisioning, agents, a call, the
 * dashboard, an idempotent POST and a restart, with every read model in MongoDB and every find
 * served by an index the adapter created.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MongoReadStore } from '../../src/gateways/read-store/mongodb.js';
import { HotReadStore } from '../../src/gateways/read-store/hot.js';
import pino from 'pino';
import { loadConfig } from '../../src/config.js';
import { createPlatform } from '../../src/platform.js';
import { startServer, type TestServer } from '../support/server.js';
import { ADMIN, ASHA, teamDoc } from '../support/fixtures.js';
import { ended, eventually, reached } from '../support/wait.js';
import { MongoDouble } from '../support/mongo-double/server.js';

describe('the platform on MONGODB_URL (MongoDB wire-protocol double)', () => {
  const double = new MongoDouble();
  const DB = 'telephony-e2e';
  let s: TestServer;
  const env = () => ({ MONGODB_URL: double.url(DB), SIM_ANSWER_MS: '30', SIM_RING_TIMEOUT_MS: '300' });
  const patch = (query: string, auth: [string, string] = ADMIN) => s.api(`/api/v1/agents?${query}`, { method: 'PATCH', auth });
  const agents = async (auth: [string, string] = ADMIN) => (await s.api('/api/v1/agents', { auth })).json();
  const dashboard = async () => (await s.api('/api/v1/dashboard?svc-id=101')).json();

  beforeAll(async () => {
    await double.start();
    s = await startServer(env());
  });
  afterAll(async () => {
    await s?.stop();
    await double.stop();
  });

  it('keeps the read models in MongoDB, not in DATA_DIR', async () => {
    const reads = s.platform.ctx.reads;
    // The projector's process answers hot models from memory, over the MongoDB store.
    expect(reads instanceof HotReadStore ? reads.inner : reads).toBeInstanceOf(MongoReadStore);
    const res = await s.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() });
    expect(res.status).toBe(200);
    expect(existsSync(path.join(s.dataDir, 'read.db'))).toBe(false);
    const services = double.documents(DB, 'services');
    expect(services.map((d) => d._id).sort()).toEqual(['101', '202']);
    // Projection documents carry the log position that last wrote them.
    for (const d of services) expect(d.p).toEqual(expect.any(Number));
    expect(double.documents(DB, '_checkpoints').length).toBeGreaterThan(10);
  });

  it('PATCH /agents then GET /agents and the dashboard read their own writes', async () => {
    expect((await agents()).map((a: { id: number }) => a.id)).toEqual([1001, 1002, 1003]);
    const res = await patch('break=3', ASHA);
    expect([res.status, await res.json()]).toEqual([200, { status: 0, break: 3 }]);
    expect((await agents(ASHA))[0].status).toBe(0);
    expect((await dashboard()).agentsData.find((a: { id: number }) => a.id === 1001).status).toBe('3');
    expect((await patch('break=0', ASHA)).status).toBe(200);
    expect((await dashboard()).agentsData.find((a: { id: number }) => a.id === 1001).status).toBe('0');
  });

  it('a call runs end to end and the dashboard follows it', async () => {
    for (const [number, q] of Object.entries({ '9100001001': 'status=0', '9100001002': 'status=2', '9100001003': 'status=2' })) {
      expect((await patch(`${q}&agent-number=${number}`)).status).toBe(200);
    }
    const placed = await s.api('/api/v1/calls', { method: 'POST', form: { number: '9876543210' } });
    expect(placed.status).toBe(200);
    const xnid = (await placed.json()).id as string;
    await reached(s, xnid, 'CallBridged');
    expect((await dashboard()).agentStats.busyAgents).toBe(1);
    const hangup = await s.api(`/api/v1/calls/${xnid}`, { method: 'POST', form: { signal: 'hangup' } });
    expect([hangup.status, await hangup.json()]).toEqual([200, true]);
    const events = await ended(s, xnid);
    expect((events.find((e) => e.type === 'CallEnded')!.data as { disposition: string }).disposition).toBe('answered');
    await eventually(async () => (await (await s.api('/api/v1/agents-free')).json()).length === 1, 'agent free again');
    const stats = (await dashboard()).callStats;
    expect(stats).toMatchObject({ obCalls: 1, totalCalls: 1 });
  });

  it('an Idempotency-Key is claimed and answered from MongoDB, under a TTL index', async () => {
    const send = () => s.api('/api/v1/send-sms', { method: 'POST', form: { number: '9876543210', message: 'hello', 'service-id': '101' }, headers: { 'idempotency-key': 'mongo-e2e-1' } });
    const first = await send();
    const again = await send();
    expect(first.status).toBe(200);
    expect([again.status, await again.text()]).toEqual([200, await first.text()]);
    expect(double.documents(DB, 'idempotency')).toHaveLength(1);
    // Sent once: the simulator's outbox (insertIfAbsent on the SMS id) holds one message.
    await eventually(async () => double.documents(DB, 'sim-sms').length === 1, 'the SMS to be sent');
    expect(double.indexes(DB, 'idempotency')).toContainEqual({ name: 'x_1', key: { x: 1 }, expireAfterSeconds: 0 });
  });

  it('every find the platform made was served by an index the adapter created at start', async () => {
    const mine = double.queries.filter((q) => q.ns.startsWith(`${DB}.`));
    expect(mine.length).toBeGreaterThan(5);
    const unindexed = mine.filter((q) => q.index === null).map((q) => `${q.ns} where ${q.equality.join(',')} sort ${JSON.stringify(q.sort)}`);
    expect(unindexed).toEqual([]);
  });

  it('a restart resumes from the checkpoints in MongoDB with the read models intact', async () => {
    const before = await agents();
    const dataDir = s.dataDir;
    await s.platform.stop();
    s = await startServer(env(), { dataDir });
    expect(await agents()).toEqual(before);
    expect((await patch('break=2', ASHA)).status).toBe(200);
    expect((await agents(ASHA))[0].status).toBe(0);
    expect((await dashboard()).agentsData.find((a: { id: number }) => a.id === 1001).status).toBe('3');
  });

  it('an api process without the projector reads its own writes through the checkpoints stored in MongoDB', async () => {
    // The projector and workers in one platform, the api alone in another, sharing the log and the database.
    const projector = await createPlatform(
      loadConfig({ ...s.engines?.env, ...env(), ROLES: 'projector,worker', DATA_DIR: s.dataDir, PORT: '0', SOCKET_PORT: '0', OPERATOR_TOKEN: 'x', LOG_LEVEL: 'silent' }),
      { logger: pino({ level: 'silent' }) },
    );
    await s.platform.stop();
    await projector.start();
    s = await startServer({ ...env(), ROLES: 'api' }, { dataDir: s.dataDir });
    try {
      expect(s.platform.runner).toBeNull();
      const res = await patch('break=5', ASHA);
      expect([res.status, await res.json()]).toEqual([200, { status: 0, break: 5 }]);
      expect((await dashboard()).agentsData.find((a: { id: number }) => a.id === 1001).status).toBe('3');
      expect((await patch('break=0', ASHA)).status).toBe(200);
      expect((await dashboard()).agentsData.find((a: { id: number }) => a.id === 1001).status).toBe('0');
    } finally {
      await projector.stop();
    }
  });
});
