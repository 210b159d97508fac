/**
 * `EVENTSTORE_URL=kurrentdb://... MONGODB_URL=mongodb://... REDIS_URL=redis://... npm start`: the
 * built server as a child process with all three engines at once (events on the KurrentDB gRPC
 * double, read models on the MongoDB wire-protocol double, jobs on the real Redis under a prefix of
 * its own). It provisions, runs a call to its end, delivers the call's webhook, then restarts on a
 * fresh DATA_DIR and gives the same answers: nothing the server needs lives on its local disk.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { dropRedisKeys } from '../support/redis-keys.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { KurrentDbDouble } from '../support/kurrentdb-double.js';
import { MongoDouble } from '../support/mongo-double/server.js';
import { buildPlatform, PlatformProcess, type Build } from '../support/processes.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { ADMIN, teamDoc } from '../support/fixtures.js';
import { OPERATOR_TOKEN } from '../support/server.js';
import { until } from '../support/until.js';

// null when no Redis answered at the start of the run (test/support/redis-global.ts): skipped.
const redisUrl = inject('redisUrl') ?? '';
const prefix = `cttest-engines-${process.pid}-${Date.now().toString(36)}`;
const basic = ([u, p]: [string, string]) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;

describe.skipIf(!redisUrl)('npm start with EVENTSTORE_URL, MONGODB_URL and REDIS_URL together', () => {
  let build: Build;
  let kurrent: KurrentDbDouble;
  let mongo: MongoDouble;
  let rx: Receiver;
  let server: PlatformProcess | undefined;
  const dirs: string[] = [];

  const start = async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'ct-engines-'));
    dirs.push(dataDir);
    return PlatformProcess.start(build, 'server', {
      EVENTSTORE_URL: kurrent.connectionString(),
      MONGODB_URL: mongo.url('telephony'),
      REDIS_URL: redisUrl,
      REDIS_PREFIX: prefix,
      DATA_DIR: dataDir,
      SIM_ANSWER_MS: '50',
      WEBHOOK_ALLOW_PRIVATE: 'true',
    });
  };
  const api = (p: string, init: RequestInit & { form?: Record<string, string> } = {}) =>
    fetch(server!.url + p, {
      ...init,
      headers: { authorization: basic(ADMIN), ...(init.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      body: init.form ? new URLSearchParams(init.form).toString() : init.body,
    });
  const ops = (p: string, init: RequestInit = {}) =>
    fetch(server!.url + p, { ...init, headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json' } });
  const json = async (res: Promise<Response>) => {
    const r = await res;
    expect(r.status, r.url).toBe(200);
    return r.json();
  };
  const callTypes = (xnid: string) => kurrent.log.filter((e) => e.streamId === `call-${xnid}`).map((e) => e.type);

  beforeAll(async () => {
    build = buildPlatform();
    kurrent = new KurrentDbDouble();
    await kurrent.start();
    mongo = new MongoDouble();
    await mongo.start();
    rx = await startReceiver();
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    await rx?.close();
    await kurrent?.stop();
    await mongo?.stop();
    build?.remove();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    await dropRedisKeys(redisUrl, `${prefix}:*`);
  }, 60_000);

  it('provisions, runs a call to its end with its webhook, and answers the same after a restart on a fresh DATA_DIR', async () => {
    server = await start();
    const doc = teamDoc();
    doc.services[0].webhook = { url: `${rx.url}/hook`, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' };
    expect((await ops('/ops/v1/provisioning', { method: 'PUT', body: JSON.stringify(doc) })).status).toBe(200);
    expect((await api('/api/v1/agents?status=0&agent-number=9100001001', { method: 'PATCH' })).status).toBe(200);

    const placed = await api('/api/v1/calls', { method: 'POST', form: { number: '9876543210', 'agent-sip': 'asha' } });
    expect(placed.status, await placed.clone().text()).toBe(200);
    const { id: xnid } = (await placed.json()) as { id: string };
    await until(async () => callTypes(xnid).includes('CallBridged'), `call ${xnid} bridged`, 20_000, 50);
    expect((await api('/api/v1/hangup', { method: 'POST', form: { xnid } })).status).toBe(200);
    await until(async () => callTypes(xnid).includes('CallEnded'), `call ${xnid} ended`, 20_000, 50);

    // The webhook goes out through the BullMQ queue in Redis, once.
    const delivered = async () => ((await json(ops('/ops/v1/deliveries?svc-id=101&status=delivered'))) as { callid?: string }[]).filter((d) => d.callid === xnid);
    await until(async () => (await delivered()).length === 1, 'the webhook delivered', 20_000, 100);
    const hooks = () => rx.received.filter((r) => (JSON.parse(r.body) as { callid?: string }).callid === xnid);
    expect(hooks()).toHaveLength(1);

    // Every store is the engines': the queue's keys in Redis, documents in MongoDB, the call in KurrentDB.
    const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
    try {
      expect((await redis.keys(`${prefix}:*`)).length).toBeGreaterThan(0);
    } finally {
      redis.disconnect();
    }
    expect(mongo.documents('telephony', 'services').map((d) => d._id).sort()).toEqual(['101', '202']);
    expect(callTypes(xnid).filter((t) => t === 'CallEnded')).toHaveLength(1);

    // Agent state settles when the worker freed the agent (after CallEnded): wait for it, then read.
    const agents = () => json(api('/api/v1/agents?svc-id=101'));
    await until(async () => ((await agents()) as { id: number; call_txn_id?: string }[]).find((a) => a.id === 1001)?.call_txn_id?.startsWith(xnid), 'agent history', 20_000, 100);
    const answers = async () => {
      const agentList = (await agents()) as { id: number; call_txn_id: string }[];
      const asha = agentList.find((a) => a.id === 1001)!;
      const dashboard = (await json(api('/api/v1/dashboard?svc-id=101'))) as { agentsData: unknown[] };
      // Recording links are signed for a time and name the process's port: compare the file they name.
      const unsign = (v: unknown) => JSON.parse(JSON.stringify(v).replace(/http:\/\/127\.0\.0\.1:\d+(\/recordings\/[^?"]+)\?[^"]*/g, '$1'));
      return unsign({
        agents: agentList,
        dashboardAgents: dashboard.agentsData,
        agentHistory: await json(api(`/api/v1/agent-recent-calls?svc-id=101&recent_txn_id=${asha.call_txn_id}`)),
        customer: await json(api('/api/v1/customer-details?svc-id=101&customer-number=9876543210&detailed=true')),
        deliveries: await delivered(),
      });
    };
    const before = await answers();
    expect((before.agentHistory as { xnid: string; disposition: string }[])[0]).toMatchObject({ xnid, disposition: 'ANSWERED' });
    expect((before.customer as { crc: { xnid: string }[] }).crc[0]!.xnid).toBe(xnid);

    // Restart: a new process on a new, empty DATA_DIR, the same three engines.
    expect((await server.stop()).code).toBe(0);
    const appended = kurrent.log.length;
    server = await start();
    expect(await answers()).toEqual(before);
    // Nothing done twice by the restarted worker: no new call events, no second webhook.
    expect(kurrent.log.filter((e) => e.streamId === `call-${xnid}`).length).toBe(callTypes(xnid).length);
    expect(callTypes(xnid).filter((t) => t === 'CallEnded')).toHaveLength(1);
    expect(hooks()).toHaveLength(1);
    expect(kurrent.log.slice(appended).filter((e) => e.streamId === `call-${xnid}`)).toEqual([]);
  }, 120_000);
});
