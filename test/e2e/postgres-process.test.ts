/**
 * `DATABASE_URL=postgres://... REDIS_URL=redis://... npm start` on the real servers: the built server
 * as child processes, events, read models and the worker lease in a PostgreSQL database of this file's
 * own (dropped after), jobs on the real Redis under a prefix of its own.
 *
 * - Every role in one process: provisions, runs a call to its end with its webhook, then restarts on
 *   a fresh DATA_DIR and gives the same answers: nothing it needs lives on its local disk.
 * - The roles as separate processes, each on a DATA_DIR of its own (no shared disk): a call through
 *   api, projector and worker; the active worker killed with SIGKILL, the standby takes the lease in
 *   PostgreSQL and the next call completes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { dropRedisKeys } from '../support/redis-keys.js';
import { buildPlatform, PlatformProcess, type Build } from '../support/processes.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { ADMIN, teamDoc } from '../support/fixtures.js';
import { OPERATOR_TOKEN } from '../support/server.js';
import { until } from '../support/until.js';
import { createDatabase, dropDatabase, postgresAvailable } from '../support/postgres.js';
import { PostgresEventStore } from '../../src/gateways/event-store/postgres.js';

const redisUrl = inject('redisUrl') ?? '';
const pgUp = await postgresAvailable();
const prefix = `cttest-pg-${process.pid}-${Date.now().toString(36)}`;
const basic = ([u, p]: [string, string]) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;

describe.skipIf(!redisUrl || !pgUp)('npm start with DATABASE_URL and REDIS_URL', () => {
  let build: Build;
  let rx: Receiver;
  const procs: PlatformProcess[] = [];
  const dirs: string[] = [];
  const dbs: string[] = [];

  const start = async (databaseUrl: string, name: string, env: Record<string, string> = {}, waitStarted = true) => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'ct-pg-'));
    dirs.push(dataDir);
    const p = await PlatformProcess.start(
      build,
      name,
      { DATABASE_URL: databaseUrl, REDIS_URL: redisUrl, REDIS_PREFIX: `${prefix}-${dbs.length}`, DATA_DIR: dataDir, SIM_ANSWER_MS: '50', WEBHOOK_ALLOW_PRIVATE: 'true', ...env },
      waitStarted,
    );
    procs.push(p);
    return p;
  };
  const client = (server: () => PlatformProcess) => ({
    api: (p: string, init: RequestInit & { form?: Record<string, string> } = {}) =>
      fetch(server().url + p, {
        ...init,
        headers: { authorization: basic(ADMIN), ...(init.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
        body: init.form ? new URLSearchParams(init.form).toString() : init.body,
      }),
    ops: (p: string, init: RequestInit = {}) => fetch(server().url + p, { ...init, headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json' } }),
  });
  const json = async (res: Promise<Response>) => {
    const r = await res;
    expect(r.status, r.url).toBe(200);
    return r.json();
  };
  const database = async () => {
    const db = await createDatabase('ct_e2e_proc');
    dbs.push(db.name);
    return db.url;
  };
  /** A call's event types as the log in PostgreSQL holds them. */
  const callTypes = async (url: string, xnid: string) => {
    const store = await PostgresEventStore.open(url);
    try {
      return (await store.readStream(`call-${xnid}`)).map((e) => e.type);
    } finally {
      await store.close();
    }
  };
  /** Places a call to asha, waits for the bridge, hangs up, waits for CallEnded: its xnid. */
  const runCall = async (url: string, api: ReturnType<typeof client>['api']) => {
    const placed = await api('/api/v1/calls', { method: 'POST', form: { number: '9876543210', 'agent-sip': 'asha' } });
    expect(placed.status, await placed.clone().text()).toBe(200);
    const { id: xnid } = (await placed.json()) as { id: string };
    await until(async () => (await callTypes(url, xnid)).includes('CallBridged'), `call ${xnid} bridged`, 30_000, 100);
    expect((await api('/api/v1/hangup', { method: 'POST', form: { xnid } })).status).toBe(200);
    await until(async () => (await callTypes(url, xnid)).includes('CallEnded'), `call ${xnid} ended`, 30_000, 100);
    return xnid;
  };

  beforeAll(async () => {
    build = buildPlatform();
    rx = await startReceiver();
  }, 120_000);

  afterAll(async () => {
    for (const p of procs) await p.stop();
    await rx?.close();
    build?.remove();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    for (const db of dbs) await dropDatabase(db);
    await dropRedisKeys(redisUrl, `${prefix}*`);
  }, 60_000);

  it('every role in one process: a call with its webhook, and the same answers after a restart on a fresh DATA_DIR', async () => {
    const url = await database();
    let server = await start(url, 'server');
    const { api, ops } = client(() => server);
    const doc = teamDoc();
    doc.services[0].webhook = { url: `${rx.url}/hook`, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' };
    expect((await ops('/ops/v1/provisioning', { method: 'PUT', body: JSON.stringify(doc) })).status).toBe(200);
    expect((await api('/api/v1/agents?status=0&agent-number=9100001001', { method: 'PATCH' })).status).toBe(200);
    const xnid = await runCall(url, api);

    const delivered = async () => ((await json(ops('/ops/v1/deliveries?svc-id=101&status=delivered'))) as { callid?: string }[]).filter((d) => d.callid === xnid);
    await until(async () => (await delivered()).length === 1, 'the webhook delivered', 30_000, 100);
    const hooks = () => rx.received.filter((r) => (JSON.parse(r.body) as { callid?: string }).callid === xnid);
    expect(hooks()).toHaveLength(1);

    const agents = () => json(api('/api/v1/agents?svc-id=101'));
    await until(async () => ((await agents()) as { id: number; call_txn_id?: string }[]).find((a) => a.id === 1001)?.call_txn_id?.startsWith(xnid), 'agent history', 30_000, 100);
    const answers = async () => {
      const agentList = (await agents()) as { id: number; call_txn_id: string }[];
      const asha = agentList.find((a) => a.id === 1001)!;
      const dashboard = (await json(api('/api/v1/dashboard?svc-id=101'))) as { agentsData: unknown[] };
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
    const events = (await callTypes(url, xnid)).length;

    expect((await server.stop()).code).toBe(0);
    server = await start(url, 'server again');
    expect(await answers()).toEqual(before);
    // Nothing done twice by the restarted worker: no new call events, no second webhook.
    expect(await callTypes(url, xnid)).toHaveLength(events);
    expect(hooks()).toHaveLength(1);
  }, 180_000);

  it('the roles as separate processes on DATA_DIRs of their own; a standby worker takes the lease over after a kill -9', async () => {
    const url = await database();
    const projector = await start(url, 'projector', { ROLES: 'projector' });
    const workerA = await start(url, 'worker A', { ROLES: 'worker' });
    await workerA.waitForLine((l) => /active worker|lease taken/.test(String(l.msg)) || l.msg === 'cloud-telephony started');
    const workerB = await start(url, 'worker B', { ROLES: 'worker' });
    await workerB.waitForLine((l) => l.msg === 'worker lease held by another process: standing by', 30_000);
    const apiProc = await start(url, 'api', { ROLES: 'api,socket' });
    const { api, ops } = client(() => apiProc);
    expect((await ops('/ops/v1/provisioning', { method: 'PUT', body: JSON.stringify(teamDoc()) })).status).toBe(200);
    expect((await api('/api/v1/agents?status=0&agent-number=9100001001', { method: 'PATCH' })).status).toBe(200);
    const first = await runCall(url, api);
    await until(async () => ((await json(api('/api/v1/agents?svc-id=101'))) as { id: number; call_txn_id?: string }[]).find((a) => a.id === 1001)?.call_txn_id?.startsWith(first), 'asha free again', 30_000, 100);

    await workerA.kill9();
    await workerB.waitForLine((l) => l.msg === 'worker lease taken over: this process is now the active worker', 60_000);
    const second = await runCall(url, api);
    expect(second).not.toBe(first);
    expect((await callTypes(url, first)).filter((t) => t === 'CallEnded')).toHaveLength(1);
    expect(projector.lines.some((l) => Number(l.level) >= 50)).toBe(false);
  }, 240_000);
});
