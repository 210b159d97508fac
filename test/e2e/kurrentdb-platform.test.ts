/**
 * The whole platform (every role in one process) on the KurrentDB adapter, against the in-process
 * gRPC double: provisioning, agents, a call from request to webhook record, read-your-writes, and a
 * dropped subscription in the middle of it. The double stands in for KurrentDB's protocol only.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { dropRedisKeys } from '../support/redis-keys.js';
import { loadConfig } from '../../src/config.js';
import { createPlatform, type Platform } from '../../src/platform.js';
import { MongoDouble } from '../support/mongo-double/server.js';
import { OPERATOR_TOKEN, startServer, type TestServer } from '../support/server.js';
import { ADMIN, teamDoc } from '../support/fixtures.js';
import { ended, eventually, legTypes, reached } from '../support/wait.js';
import { KurrentDbDouble } from '../support/kurrentdb-double.js';

describe('the platform on KurrentDB (gRPC double)', () => {
  const double = new KurrentDbDouble();
  let s: TestServer;

  beforeAll(async () => {
    const url = await double.start();
    s = await startServer({ EVENTSTORE_URL: url, SIM_ANSWER_MS: '30', SIM_RING_TIMEOUT_MS: '300' });
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() })).status).toBe(200);
  });
  afterAll(async () => {
    await s?.stop();
    await double.stop();
  });

  it('stores provisioning in KurrentDB, in one multi-stream append', async () => {
    const types = double.log.filter((e) => !e.type.startsWith('$')).map((e) => e.type);
    expect(types).toContain('ServiceProvisioned');
    expect(types).toContain('UserProvisioned');
    expect(double.calls.appendSession).toBeGreaterThanOrEqual(1);
    // Applying the same document again appends nothing.
    const before = double.log.length;
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() })).status).toBe(200);
    expect(double.log.length).toBe(before);
  });

  it('runs a call end to end and reads its own writes, across a dropped subscription', async () => {
    const patch = await s.api('/api/v1/agents?status=0&agent-number=9100001001', { method: 'PATCH', auth: ADMIN });
    expect([patch.status, await patch.json()]).toEqual([200, { status: 0, break: -1 }]);
    const free = await (await s.api('/api/v1/agents-free')).json();
    expect(free.map((a: { id: number }) => a.id)).toEqual([1001]);

    const placed = await s.api('/api/v1/calls', { method: 'POST', form: { number: '9876543210' } });
    expect(placed.status).toBe(200);
    const xnid = (await placed.json()).id as string;
    await reached(s, xnid, 'CallBridged');
    // Every follower (projector, call flow, socket, delivery planner) loses its subscription.
    expect(double.dropSubscriptions()).toBeGreaterThanOrEqual(3);
    expect((await s.api(`/api/v1/calls/${xnid}`, { method: 'POST', form: { signal: 'hangup' } })).status).toBe(200);
    const events = await ended(s, xnid);
    expect(legTypes(events)).toHaveLength(6);
    expect((events.at(-1)!.data as { disposition: string }).disposition).toBe('answered');
    // The call reached the read models (customer history) although every subscription was dropped.
    const crm = await eventually(async () => {
      const r = await s.api('/api/v1/customer-details?customer-number=9876543210&svc-id=101&detailed=true');
      const body = r.status === 200 ? await r.json() : null;
      return body?.crm.recent_txn_id.includes(xnid) ? body : null;
    }, 'the call in the customer history');
    expect(crm.crc[0]).toMatchObject({ disposition: 'ANSWERED', callType: 'OUTBOUND' });
    // Read-your-writes: a state change answers with, and is at once visible as, the new state.
    const breakRes = await s.api('/api/v1/agents?break=2&agent-number=9100001001', { method: 'PATCH', auth: ADMIN });
    expect(await breakRes.json()).toEqual({ status: 0, break: 2 });
    const agents = await (await s.api('/api/v1/agents-free')).json();
    expect(agents).toEqual([]);
    // No event reached the log twice.
    const ids = double.log.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

// Processes that share no disk share the worker lease in Redis (a file lease would be each host's own).
const redisUrl = inject('redisUrl');
const redisPrefix = `ct-kdb-roles-${process.pid}-${Date.now().toString(36)}`;

describe.skipIf(!redisUrl)('KurrentDB and MongoDB with roles that share no disk (the compose layout)', () => {
  const kdb = new KurrentDbDouble();
  const mongo = new MongoDouble();
  const projectorDir = mkdtempSync(path.join(tmpdir(), 'ct-kdb-projector-'));
  let projector: Platform;
  let api: TestServer;

  beforeAll(async () => {
    const env = { EVENTSTORE_URL: await kdb.start(), MONGODB_URL: (await mongo.start(), mongo.url('nodisk')), REDIS_URL: redisUrl!, REDIS_PREFIX: redisPrefix, SIM_ANSWER_MS: '30' };
    projector = await createPlatform(
      loadConfig({ ...env, ROLES: 'projector,worker,socket', DATA_DIR: projectorDir, PORT: '0', SOCKET_PORT: '0', OPERATOR_TOKEN, LOG_LEVEL: 'silent' }),
      { logger: pino({ level: 'silent' }) },
    );
    await projector.start();
    // Its own DATA_DIR: nothing of the projector's files is in reach.
    api = await startServer({ ...env, ROLES: 'api' });
  });
  afterAll(async () => {
    await api?.stop();
    await projector?.stop();
    await kdb.stop();
    await mongo.stop();
    rmSync(projectorDir, { recursive: true, force: true });
    if (redisUrl) await dropRedisKeys(redisUrl, `${redisPrefix}:*`);
  });

  it("an api process answers the analysts' export from models it builds from the log itself", async () => {
    expect((await api.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() })).status).toBe(200);
    expect((await api.api('/api/v1/agents?status=0&agent-number=9100001001', { method: 'PATCH' })).status).toBe(200);
    const placed = await api.api('/api/v1/calls', { method: 'POST', form: { number: '9876543210' } });
    const xnid = (await placed.json()).id as string;
    await reached(api, xnid, 'CallBridged');
    expect((await api.api('/api/v1/hangup', { method: 'POST', form: { xnid } })).status).toBe(200);
    await ended(api, xnid);
    const res = await api.api('/api/v1/calls?svc-id=101&format=jsonl');
    expect(res.status).toBe(200);
    const rows = (await res.text()).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(JSON.stringify(rows)).toContain(xnid);
  });
});
