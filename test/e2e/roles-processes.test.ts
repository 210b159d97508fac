/**
 * The roles as separate OS processes on one DATA_DIR and a real Redis: two `api` processes, a
 * `projector`, a `worker` and a `socket`, each `node build/src/main.js` with its own ROLES. Calls,
 * agents, webhooks and the event socket run through them while the projector and the worker are
 * killed (SIGKILL) and restarted mid-run; nothing may be lost or done twice, a write on one api
 * process is seen by the next read on the other, and the per-credential rate limit and the OTP send
 * limit hold across both api processes. Every wait polls with a deadline.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { dropRedisKeys } from '../support/redis-keys.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SqliteEventStore } from '../../src/gateways/event-store/sqlite.js';
import { LEG_EVENT_TYPES } from '../../src/domain/call-events.js';
import { buildPlatform, PlatformProcess, type Build } from '../support/processes.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { LineClient } from '../support/socket-client.js';
import { ADMIN, GLOBEX, teamDoc } from '../support/fixtures.js';
import { OPERATOR_TOKEN } from '../support/server.js';
import { until } from '../support/until.js';

// null when no Redis answered at the start of the run (test/support/redis-global.ts): skipped.
const redisUrl = inject('redisUrl') ?? '';
// Every Redis key of this run (queues, lease, rate counters) under its own prefix.
const prefix = `cttest-roles-${process.pid}-${Date.now().toString(36)}`;
const RATE = 40;
const OTP_SENDS = 3;

const basic = ([u, p]: [string, string]) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;

describe.skipIf(!redisUrl)('roles as separate processes on one DATA_DIR and Redis', () => {
  let build: Build;
  let dataDir: string;
  let rx: Receiver;
  let log: SqliteEventStore;
  let socket: LineClient;
  const procs: PlatformProcess[] = [];
  let api1: PlatformProcess;
  let api2: PlatformProcess;
  let projector: PlatformProcess;
  let worker: PlatformProcess;
  let socketProc: PlatformProcess;

  const env = () => ({
    DATA_DIR: dataDir,
    REDIS_URL: redisUrl,
    REDIS_PREFIX: prefix,
    HEALTH_PORT: '0',
    SIM_ANSWER_MS: '50',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    WEBHOOK_RETRY_MS: '200,400,800,1600',
    RATE_LIMIT_RPS: String(RATE),
    OTP_SENDS_PER_15MIN: String(OTP_SENDS),
  });
  async function start(name: string, roles: string): Promise<PlatformProcess> {
    const p = await PlatformProcess.start(build, name, { ...env(), ROLES: roles });
    procs.push(p);
    return p;
  }
  const api = (p: PlatformProcess, path: string, init: RequestInit & { form?: Record<string, string>; as?: [string, string] } = {}) =>
    fetch(p.url + path, {
      ...init,
      headers: { authorization: basic(init.as ?? ADMIN), ...(init.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}), ...(init.headers as object) },
      body: init.form ? new URLSearchParams(init.form).toString() : init.body,
    });
  const ops = (p: PlatformProcess, path: string, init: RequestInit = {}) =>
    fetch(p.url + path, { ...init, headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json', ...(init.headers as object) } });
  const types = async (xnid: string) => (await log.readStream(`call-${xnid}`)).map((e) => e.type);
  const reachedInLog = async (xnid: string, type: string, ms = 20_000) => {
    try {
      await until(async () => (await types(xnid)).includes(type), `call ${xnid}: ${type}`, ms, 50);
    } catch (err) {
      const tail = worker.lines.slice(-15).map((l) => JSON.stringify(l)).join('\n');
      throw new Error(`${(err as Error).message}; the call's events: ${(await types(xnid)).join(', ')}; the worker's last lines:\n${tail}`);
    }
  };
  const healthOf = async (p: PlatformProcess) => {
    const line = await p.waitForLine((l) => l.msg === 'health endpoints listening');
    return `http://127.0.0.1:${line.port as number}`;
  };

  beforeAll(async () => {
    build = buildPlatform();
    dataDir = mkdtempSync(path.join(tmpdir(), 'ct-roles-'));
    // The first try of every webhook fails: retries are in Redis when the worker is killed.
    rx = await startReceiver((r) => (rx.received.filter((x) => x.headers['webhook-id'] === r.headers['webhook-id']).length === 1 ? 500 : 200));
    // The projector first: it creates the stores the others open.
    projector = await start('projector', 'projector');
    [api1, api2, worker, socketProc] = await Promise.all([start('api#1', 'api'), start('api#2', 'api'), start('worker', 'worker'), start('socket', 'socket')]);
    log = new SqliteEventStore(path.join(dataDir, 'events.db'));
  }, 240_000);

  afterAll(async () => {
    socket?.close();
    for (const p of procs) await p.stop();
    // ROLES_LOG_DIR=dir keeps every process's log for a look after a failure.
    if (process.env.ROLES_LOG_DIR) for (const p of procs) writeFileSync(path.join(process.env.ROLES_LOG_DIR, `${p.name.replace(/\W+/g, '_')}-${p.proc.pid}.log`), p.log());
    await log?.close();
    await rx?.close();
    build?.remove();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    await dropRedisKeys(redisUrl, `${prefix}*`);
  }, 60_000);

  it('every role answers its health check; a write on api#1 is read on api#2 at once', async () => {
    for (const p of [projector, worker, socketProc]) {
      expect(p.url).toBe('');
      const res = await fetch(`${await healthOf(p)}/healthz`);
      expect(await res.json()).toEqual({ status: 'ok' });
    }
    const doc = teamDoc();
    doc.services[0].webhook = { url: `${rx.url}/hook`, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' };
    expect((await ops(api1, '/ops/v1/provisioning', { method: 'PUT', body: JSON.stringify(doc) })).status).toBe(200);
    // No wait in between: the provisioned users and agents are there for api#2's very next request.
    const agents = await api(api2, '/api/v1/agents?svc-id=101');
    expect(agents.status).toBe(200);
    expect(((await agents.json()) as unknown[]).length).toBe(3);
    for (const n of ['9100001001', '9100001002', '9100001003']) {
      expect((await api(api1, `/api/v1/agents?status=0&agent-number=${n}`, { method: 'PATCH' })).status).toBe(200);
      const free = (await (await api(api2, '/api/v1/agents-free?svc-id=101')).json()) as { id: number }[];
      expect(free.map((a) => a.id)).toContain(Number(n.slice(-4)));
    }
    for (const p of [projector, worker, socketProc]) expect((await fetch(`${await healthOf(p)}/readyz`)).status).toBe(200);
  }, 60_000);

  it('runs calls, webhooks and the socket through the roles while the projector and the worker are killed and restarted', async () => {
    socket = await LineClient.authed(socketProc.socketPort, 101, 'k-101-secret');
    const calls: string[] = [];
    const place = async (p: PlatformProcess, sip: string) => {
      const res = await api(p, '/api/v1/calls', { method: 'POST', form: { number: `98765432${10 + calls.length}`, 'agent-sip': sip } });
      expect(res.status, await res.clone().text()).toBe(200);
      const { id } = (await res.json()) as { id: string };
      calls.push(id);
      return id;
    };
    const agentsFree = async (p: PlatformProcess) => ((await (await api(p, '/api/v1/agents-free?svc-id=101')).json()) as { id: number }[]).map((a) => a.id).sort();

    // Round 1: three calls bridged, then the projector dies. Hang-ups are taken by the api processes
    // (they append), carried out by the worker, and answered once the restarted projector caught up.
    const round1 = [await place(api1, 'asha'), await place(api2, 'bala'), await place(api1, 'chitra')];
    for (const id of round1) await reachedInLog(id, 'CallBridged');
    await projector.kill9();
    // Requests wait for the read models (read-your-writes), so these wait for the new projector; one
    // that waited too long is answered 503 with nothing done, and is sent again as a client would.
    const hangup = async (p: PlatformProcess, xnid: string) => {
      for (;;) {
        const res = await api(p, '/api/v1/hangup', { method: 'POST', form: { xnid } });
        if (res.status !== 503) return res.status;
      }
    };
    const hangups = round1.map((id, i) => hangup(i % 2 ? api1 : api2, id));
    projector = await start('projector (restarted)', 'projector');
    expect(await Promise.all(hangups)).toEqual([200, 200, 200]);
    for (const id of round1) await reachedInLog(id, 'CallEnded');
    // Read-your-writes: every agent the worker freed is free for either api process at once.
    expect(await agentsFree(api2)).toEqual([1001, 1002, 1003]);

    // Round 2: three more calls bridged, then the worker dies with them (and with webhook retries
    // pending in Redis). The restarted worker ends the calls it finds open and frees their agents.
    const round2 = [await place(api2, 'asha'), await place(api1, 'bala'), await place(api2, 'chitra')];
    for (const id of round2) await reachedInLog(id, 'CallBridged');
    await worker.kill9();
    worker = await start('worker (restarted)', 'worker');
    for (const id of round2) await reachedInLog(id, 'CallEnded');
    await until(async () => (await agentsFree(api1)).length === 3, 'agents free again', 20_000, 100);

    // Nothing lost, nothing twice: in the log, every call ended once.
    for (const id of calls) expect((await types(id)).filter((t) => t === 'CallEnded')).toHaveLength(1);
    // Webhooks: each call's record delivered (after its failed first try), under one id, none other.
    const byCall = () => {
      const m = new Map<string, Set<string>>();
      for (const r of rx.received) {
        const { callid } = JSON.parse(r.body) as { callid: string };
        if (!m.has(callid)) m.set(callid, new Set());
        m.get(callid)!.add(r.headers['webhook-id']!);
      }
      return m;
    };
    const delivered = async () => {
      const res = await ops(api2, '/ops/v1/deliveries?svc-id=101&status=delivered');
      return ((await res.json()) as { callid: string }[]).map((d) => d.callid).sort();
    };
    await until(async () => (await delivered()).length === calls.length, 'every webhook delivered', 40_000, 200);
    expect(await delivered()).toEqual([...calls].sort());
    const ids = byCall();
    expect([...ids.keys()].sort()).toEqual([...calls].sort());
    for (const id of calls) expect(ids.get(id)!.size).toBe(1);

    // The socket showed every leg event of every call once, in log order, across both kills.
    const legs: string[] = [];
    for (const e of await log.readAll({ maxCount: 1_000_000 })) {
      if ((LEG_EVENT_TYPES as readonly string[]).includes(e.type) && (e.data as { svcId: number }).svcId === 101) legs.push(`${(e.data as { xnid: string }).xnid}/${e.type}`);
    }
    await socket.until(() => socket.events().length >= legs.length, `${legs.length} socket events`, 20_000);
    expect(socket.events().map((e) => `${e.xnid}/${e.event}`)).toEqual(legs);

    // The read models after the projector's restart: each call once in the customer's history.
    for (const [i, id] of calls.entries()) {
      const res = await api(api1, `/api/v1/customer-details?svc-id=101&detailed=true&customer-number=98765432${10 + i}`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { crm: { recent_txn_id: string } };
      expect(body.crm.recent_txn_id.split(',')).toEqual([id]);
    }
  }, 180_000);

  it('the per-credential rate limit is one count across both api processes, kept in Redis', async () => {
    const ping = (p: PlatformProcess) => api(p, '/api/v1/ping', { as: GLOBEX });
    // Alternating processes, the remaining count goes down by one per request (or starts a new window).
    let last = RATE;
    for (let i = 0; i < 8; i++) {
      const res = await ping(i % 2 ? api2 : api1);
      expect(res.status).toBe(200);
      const remaining = Number(res.headers.get('x-ratelimit-remaining'));
      expect([last - 1, RATE - 1]).toContain(remaining);
      last = remaining;
    }
    // api#1 uses up the window; api#2's next request is refused. A window that rolled over between
    // the two (api#2 answered with a fresh count) is tried again.
    let refused: Response | null = null;
    for (let attempt = 0; attempt < 5 && !refused; attempt++) {
      for (;;) {
        const res = await ping(api1);
        if (res.status === 429 || Number(res.headers.get('x-ratelimit-remaining')) === 0) break;
      }
      const res = await ping(api2);
      if (res.status === 429) refused = res;
      else expect(Number(res.headers.get('x-ratelimit-remaining'))).toBe(RATE - 1);
    }
    expect(refused?.status).toBe(429);
    expect(await refused!.json()).toMatchObject({ isError: true, code: 'RATE_LIMITED' });
    expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
    try {
      // Keyed by the presented credential: the username and a fingerprint of the password.
      expect(await redis.keys(`${prefix}:rate:u:globex-admin|*`)).toHaveLength(1);
    } finally {
      await redis.quit();
    }
  }, 60_000);

  it('the OTP send limit holds across both api processes, one after another and all at once', async () => {
    const otp = (p: PlatformProcess, number: string) => api(p, `/api/v1/otp?number=${number}&service-id=101`);
    const statuses: number[] = [];
    for (let i = 0; i < OTP_SENDS + 2; i++) statuses.push((await otp(i % 2 ? api2 : api1, '9812300001')).status);
    expect(statuses).toEqual([...Array(OTP_SENDS).fill(200), 429, 429]);

    // A burst from both processes at once: exactly OTP_SENDS codes are issued.
    const burst = await Promise.all(Array.from({ length: 4 * OTP_SENDS }, (_, i) => otp(i % 2 ? api2 : api1, '9812300002')));
    const counts = burst.map((r) => r.status).sort();
    expect(counts).toEqual([...Array(OTP_SENDS).fill(200), ...Array(3 * OTP_SENDS).fill(429)]);
    const issued = (await log.readStream('otp-101-9812300002')).filter((e) => e.type === 'OtpIssued');
    expect(issued).toHaveLength(OTP_SENDS);
    // The provider took exactly one SMS per issued code.
    const outbox = (await (await ops(api2, '/ops/v1/simulator/sms?number=9812300002')).json()) as unknown[];
    expect(outbox).toHaveLength(OTP_SENDS);
  }, 60_000);
});
