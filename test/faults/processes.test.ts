/**
 * Real faults on real processes: a standby worker taking over after kill -9, a second start on a
 * running DATA_DIR, kill -9 during a burst of commands, calls and SMS, and Redis going away under
 * the job queue. Each server is `node build/src/main.js` as a child process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteEventStore } from '../../src/gateways/event-store/sqlite.js';
import { teamDoc } from '../support/fixtures.js';
import { ADMIN_AUTH, OPS_AUTH, PlatformProcess, basic, buildPlatform, freePort, type Build } from '../support/processes.js';
import { until } from '../support/until.js';
import { startReceiver } from '../support/receiver.js';

let build: Build;
const running: PlatformProcess[] = [];
const redises: ChildProcess[] = [];

beforeAll(() => {
  build = buildPlatform();
}, 180_000);

afterAll(async () => {
  for (const p of running) await p.ensureDead();
  for (const r of redises) if (r.exitCode === null && r.signalCode === null) r.kill('SIGKILL');
  build.remove();
});

async function start(dataDir: string, env: Record<string, string> = {}) {
  const p = await PlatformProcess.onDataDir(build, dataDir, { SIM_ANSWER_MS: '50', ...env });
  running.push(p);
  return p;
}

const form = (auth: Record<string, string>, body: Record<string, string>) => ({
  method: 'POST',
  headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams(body).toString(),
});

/** Reads the log of a DATA_DIR from the test process (SQLite in WAL mode is shared across processes). */
function logOf(dataDir: string) {
  return new SqliteEventStore(path.join(dataDir, 'events.db'));
}

async function callTypes(events: SqliteEventStore, xnid: string) {
  return (await events.readStream(`call-${xnid}`)).map((e) => e.type);
}

async function freeAgentIds(p: PlatformProcess): Promise<number[]> {
  const res = await p.fetch('/api/v1/agents-free?svc-id=101', { headers: ADMIN_AUTH });
  return ((await res.json()) as { id: number }[]).map((a) => a.id);
}

async function placeWithAsha(p: PlatformProcess, events: SqliteEventStore): Promise<string> {
  expect((await p.fetch('/api/v1/agents?status=0&agent-number=9100001001', { method: 'PATCH', headers: ADMIN_AUTH })).status).toBe(200);
  const res = await p.fetch('/api/v1/calls', form(ADMIN_AUTH, { number: '9876543210', 'agent-sip': 'asha' }));
  expect(res.status).toBe(200);
  const { id } = (await res.json()) as { id: string };
  await until(async () => (await callTypes(events, id)).includes('CallBridged'), `call ${id} bridged`);
  return id;
}

describe('one active worker and a standby', () => {
  it('a second worker stands by without touching live calls, and takes over within seconds of a kill -9', async () => {
    const dataDir = build.tempDir('data-');
    const first = await start(dataDir, { PROVISION_FILE: build.writeJson(teamDoc()) });
    const events = logOf(dataDir);
    try {
      const xnid = await placeWithAsha(first, events);
      const second = await start(dataDir);
      await second.waitForLine((l) => l.msg === 'worker lease held by another process: standing by');
      // Started as a standby: the live call and its agent were left alone.
      expect(await callTypes(events, xnid)).not.toContain('CallEnded');
      expect(await freeAgentIds(second)).not.toContain(1001);

      const killedAt = Date.now();
      await first.kill9();
      await second.waitForLine((l) => l.msg === 'worker lease taken over: this process is now the active worker', 10_000);
      // It recovers the dead worker's calls as a restart does: ended, agent free again.
      await until(async () => (await callTypes(events, xnid)).includes('CallEnded'), 'the orphaned call ended', 10_000);
      const failoverMs = Date.now() - killedAt;
      await until(async () => (await freeAgentIds(second)).includes(1001), 'asha free again');
      expect(failoverMs).toBeLessThan(5000);
      console.log(`failover after kill -9: ${failoverMs} ms`);

      // And it is the worker now: a new call runs end to end.
      const next = await placeWithAsha(second, events);
      expect((await second.fetch('/api/v1/hangup', form(ADMIN_AUTH, { xnid: next }))).status).toBe(200);
      await until(async () => (await callTypes(events, next)).includes('CallEnded'), 'the new call ended');
      await until(async () => (await freeAgentIds(second)).includes(1001), 'asha free after the new call');
    } finally {
      await events.close();
    }
  }, 120_000);

  it('a second start on the same ports fails before doing anything: live calls and agents untouched', async () => {
    const dataDir = build.tempDir('data-');
    const env = { PORT: String(await freePort()), SOCKET_PORT: String(await freePort()) };
    const first = await start(dataDir, { ...env, PROVISION_FILE: build.writeJson(teamDoc()) });
    const events = logOf(dataDir);
    try {
      const xnid = await placeWithAsha(first, events);
      const before = (await events.readAll({ maxCount: 1_000_000 })).length;
      const again = await PlatformProcess.onDataDir(build, dataDir, { SIM_ANSWER_MS: '50', ...env }, { waitStarted: false });
      running.push(again);
      const exit = await again.exited;
      expect(exit.code).not.toBe(0);
      expect(again.raw.join('\n')).toMatch(/already in use|EADDRINUSE/);
      // Nothing was appended by the failed start, the call still runs, the agent is still on it.
      expect((await events.readAll({ maxCount: 1_000_000 })).length).toBe(before);
      expect(await callTypes(events, xnid)).not.toContain('CallEnded');
      expect(await freeAgentIds(first)).not.toContain(1001);
      // The running server still controls its call.
      expect((await first.fetch('/api/v1/hangup', form(ADMIN_AUTH, { xnid }))).status).toBe(200);
      await until(async () => (await callTypes(events, xnid)).includes('CallEnded'), 'call ended by its owner');
      await until(async () => (await freeAgentIds(first)).includes(1001), 'asha free');
    } finally {
      await events.close();
    }
  }, 120_000);
});

/** A redis-server of the test's own on a free port (never the machine's shared one), persisting every write. */
async function startRedis(port: number, dir: string): Promise<ChildProcess> {
  const r = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  redises.push(r);
  let out = '';
  r.stdout!.on('data', (d) => (out += d));
  await until(() => out.includes('Ready to accept connections'), `redis on ${port}`, 10_000);
  return r;
}

async function stopRedis(r: ChildProcess) {
  const exited = new Promise((resolve) => r.once('exit', resolve));
  r.kill('SIGKILL');
  await exited;
}

describe('Redis under the job queue', () => {
  it('Redis down: send-sms answers 503 at once with nothing recorded; SIGTERM exits 0 promptly', async () => {
    const redisPort = await freePort();
    const redis = await startRedis(redisPort, build.tempDir('redis-'));
    const dataDir = build.tempDir('data-');
    const p = await start(dataDir, { REDIS_URL: `redis://127.0.0.1:${redisPort}`, PROVISION_FILE: build.writeJson(teamDoc()) });
    const events = logOf(dataDir);
    try {
      const sms = { number: '9876543210', message: 'hello', 'service-id': '101' };
      expect((await p.fetch('/api/v1/send-sms', form(ADMIN_AUTH, sms))).status).toBe(200);
      await stopRedis(redis);
      const requested = async () => (await events.readAll({ maxCount: 1_000_000 })).filter((e) => e.type === 'SmsRequested').length;
      const before = await requested();
      const t0 = Date.now();
      const res = await p.fetch('/api/v1/send-sms', { ...form(ADMIN_AUTH, sms), signal: AbortSignal.timeout(10_000) });
      const took = Date.now() - t0;
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({ isError: true, code: 'UNAVAILABLE' });
      expect(took).toBeLessThan(3000);
      expect(await requested()).toBe(before);

      const t1 = Date.now();
      p.proc.kill('SIGTERM');
      expect(await p.exited).toEqual({ code: 0, signal: null });
      expect(Date.now() - t1).toBeLessThan(6000);
    } finally {
      await events.close();
    }
  }, 60_000);

  it('Redis killed and restarted mid-queue: every acknowledged SMS is sent, none twice', async () => {
    const redisPort = await freePort();
    const redisDir = build.tempDir('redis-');
    let redis = await startRedis(redisPort, redisDir);
    const dataDir = build.tempDir('data-');
    // A slow retry keeps some jobs waiting in Redis across the restart.
    const p = await start(dataDir, { REDIS_URL: `redis://127.0.0.1:${redisPort}`, PROVISION_FILE: build.writeJson(teamDoc()) });
    const acked: string[] = [];
    const send = async (i: number) => {
      // Retried until acknowledged: a 503 during the outage means nothing was recorded.
      for (;;) {
        const res = await p.fetch('/api/v1/send-sms', form(ADMIN_AUTH, { number: `98765${String(i).padStart(5, '0')}`, message: `m${i}`, 'service-id': '101' }));
        if (res.status === 200) return acked.push(await res.text());
        expect(res.status).toBe(503);
        await until(() => redis.exitCode === null && redis.signalCode === null, 'redis back', 20_000, 50);
      }
    };
    const burst = Promise.all(Array.from({ length: 40 }, (_, i) => send(i)));
    await until(() => acked.length >= 10, '10 SMS acknowledged');
    await stopRedis(redis);
    redis = await startRedis(redisPort, redisDir);
    await burst;
    expect(new Set(acked).size).toBe(40);
    const outbox = async () => (await (await p.fetch('/ops/v1/simulator/sms', { headers: OPS_AUTH })).json()) as { id: string }[];
    // A job that was running when Redis died is taken again once its lock lapses (15 s).
    await until(async () => {
      const ids = new Set((await outbox()).map((m) => m.id));
      return acked.every((id) => ids.has(id));
    }, 'all 40 acknowledged SMS sent', 60_000, 100);
    const ids = (await outbox()).map((m) => m.id);
    // Each acknowledged SMS sent exactly once. (A request answered 503 because Redis went away
    // mid-enqueue may still have reached it; that one is sent too, once.)
    expect(ids.length).toBe(new Set(ids).size);
    expect(acked.filter((id) => !ids.includes(id))).toEqual([]);
  }, 120_000);
});

describe('kill -9 during a burst', () => {
  it('loses no acknowledged command, call or SMS, and sends no SMS twice', async () => {
    const dataDir = build.tempDir('data-');
    const doc = teamDoc();
    const first = await start(dataDir, { PROVISION_FILE: build.writeJson(doc) });
    const agents: Array<[string, [string, string]]> = [
      ['9100001002', ['bala', 's3cret-bala']],
      ['9100001003', ['acme-admin', 's3cret-admin']],
    ];
    for (const [number] of agents) expect((await first.fetch(`/api/v1/agents?status=0&agent-number=${number}`, { method: 'PATCH', headers: ADMIN_AUTH })).status).toBe(200);
    const ackedToggles = new Map<string, number>();
    const ackedSms: string[] = [];
    const ackedCalls: string[] = [];
    let stop = false;
    const loop = async (body: () => Promise<void>) => {
      while (!stop) await body().catch(() => {});
    };
    const toggler = (number: string) => {
      let on = false;
      return async () => {
        const res = await first.fetch(`/api/v1/agents?break=${on ? 0 : 1}&agent-number=${number}`, { method: 'PATCH', headers: ADMIN_AUTH });
        if (res.status === 200) {
          on = !on;
          ackedToggles.set(number, (ackedToggles.get(number) ?? 0) + 1);
        }
      };
    };
    let n = 0;
    const loops = [
      ...agents.map(([number]) => loop(toggler(number))),
      loop(async () => {
        const res = await first.fetch('/api/v1/send-sms', form(ADMIN_AUTH, { number: `98111${String(n++).padStart(5, '0')}`, message: 'burst', 'service-id': '101' }));
        if (res.status === 200) ackedSms.push(await res.text());
      }),
      loop(async () => {
        const res = await first.fetch('/api/v1/calls', form(ADMIN_AUTH, { number: `98222${String(n++).padStart(5, '0')}` }));
        if (res.status === 200) ackedCalls.push(((await res.json()) as { id: string }).id);
      }),
    ];
    await until(() => ackedSms.length >= 15 && ackedCalls.length >= 10 && [...ackedToggles.values()].every((v) => v >= 10), 'a burst under way', 30_000);
    await first.kill9();
    stop = true;
    await Promise.all(loops);

    const after = await start(dataDir);
    const events = logOf(dataDir);
    try {
      // Every acknowledged toggle is in its agent's stream (one more may have been in flight).
      for (const [number, count] of ackedToggles) {
        const agentId = doc.services[0].agents.find((a: { number: string }) => a.number === number).id;
        const toggles = (await events.readStream(`agent-101-${agentId}`)).filter((e) => e.type === 'AgentBreakStarted' || e.type === 'AgentBreakEnded').length;
        expect(toggles).toBeGreaterThanOrEqual(count);
        expect(toggles).toBeLessThanOrEqual(count + 1);
      }
      // Every acknowledged call is in the log, and the restart ended it.
      for (const xnid of ackedCalls) {
        await until(async () => (await callTypes(events, xnid)).includes('CallEnded'), `call ${xnid} ended after the restart`);
      }
      // Every acknowledged SMS is sent, exactly once.
      const outbox = async () => (await (await after.fetch('/ops/v1/simulator/sms', { headers: OPS_AUTH })).json()) as { id: string }[];
      await until(async () => {
        const ids = new Set((await outbox()).map((m) => m.id));
        return ackedSms.every((id) => ids.has(id));
      }, 'every acknowledged SMS sent', 20_000, 100);
      const ids = (await outbox()).map((m) => m.id);
      expect(ids.length).toBe(new Set(ids).size);
      console.log(`kill -9 burst: ${[...ackedToggles.values()].reduce((a, b) => a + b, 0)} toggles, ${ackedCalls.length} calls, ${ackedSms.length} SMS acknowledged; none lost`);
    } finally {
      await events.close();
    }
  }, 120_000);
});

describe('kill -9 with first delivery attempts in flight', () => {
  it('every finished call\'s webhook is delivered after the restart, once per call', async () => {
    // The first process's POSTs hang: their attempts are in flight (in memory, no job) when it dies.
    const rx = await startReceiver(() => 'hang');
    try {
      const dataDir = build.tempDir('data-');
      const doc = teamDoc();
      doc.services[0].webhook = { url: `${rx.url}/hook`, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' };
      const env = { WEBHOOK_ALLOW_PRIVATE: 'true' };
      const first = await start(dataDir, { ...env, PROVISION_FILE: build.writeJson(doc) });
      const ops = (p: string, body: unknown) => first.fetch(p, { method: 'POST', headers: { ...OPS_AUTH, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const xnids: string[] = [];
      for (let i = 0; i < 12; i++) {
        const res = await ops('/ops/v1/simulator/inbound', { did: '8000000101', from: `98333${String(i).padStart(5, '0')}` });
        expect(res.status).toBe(200);
        const { xnid } = (await res.json()) as { xnid: string };
        xnids.push(xnid);
        expect((await ops('/ops/v1/simulator/hangup', { xnid, party: 'customer' })).status).toBe(200);
      }
      const posted = () => new Set(rx.received.map((r) => r.headers['webhook-id']));
      await until(() => xnids.every((x) => posted().has(x)), 'every first attempt in flight', 20_000);
      await first.kill9();
      rx.respond = () => 200;
      const before = rx.received.length;
      const after = await start(dataDir, env);
      const deliveries = async () => (await (await after.fetch('/ops/v1/deliveries?svc-id=101', { headers: OPS_AUTH })).json()) as { callid: string; status: string }[];
      await until(async () => {
        const delivered = new Set((await deliveries()).filter((d) => d.status === 'delivered').map((d) => d.callid));
        return xnids.every((x) => delivered.has(x));
      }, 'every webhook delivered after the restart', 20_000, 100);
      // One delivery per call, each POSTed again once after the restart.
      const callids = (await deliveries()).map((d) => d.callid).filter((c) => xnids.includes(c));
      expect(callids.sort()).toEqual([...xnids].sort());
      const again = rx.received.slice(before).map((r) => r.headers['webhook-id']).filter((id) => xnids.includes(id!));
      expect(again.sort()).toEqual([...xnids].sort());
    } finally {
      await rx.close();
    }
  }, 120_000);
});

describe('the projector killed between batches', () => {
  it('resumes after kill -9 under load with every read model exactly as a rebuild from the log makes it', async () => {
    const { SqliteReadStore } = await import('../../src/gateways/read-store/sqlite.js');
    const { ProjectionRunner } = await import('../../src/projections/runner.js');
    const { projections } = await import('../../src/projections/index.js');
    const { collectionOf } = await import('../../src/projections/projection.js');
    const dataDir = build.tempDir('data-');
    const events = logOf(dataDir);
    let n = 0;
    try {
      // The projector runs in the server process (all roles): each kill -9 lands between or inside
      // its batches while commands keep appending.
      for (let round = 0; round < 3; round++) {
        const server = await start(dataDir, round === 0 ? { PROVISION_FILE: build.writeJson(teamDoc()) } : {});
        expect((await server.fetch('/api/v1/agents?status=0&agent-number=9100001002', { method: 'PATCH', headers: ADMIN_AUTH })).status).toBe(200);
        let stop = false;
        const load = Promise.all(
          [0, 1, 2].map(async (k) => {
            while (!stop) {
              const i = n++;
              if (k === 0) await server.fetch(`/api/v1/agents?break=${i % 2}&agent-number=9100001002`, { method: 'PATCH', headers: ADMIN_AUTH }).catch(() => {});
              else if (k === 1) await server.fetch('/api/v1/send-sms', form(ADMIN_AUTH, { number: `98333${String(i).padStart(5, '0')}`, message: 'x', 'service-id': '101' })).catch(() => {});
              else await server.fetch('/api/v1/calls', form(ADMIN_AUTH, { number: `98444${String(i).padStart(5, '0')}` })).catch(() => {});
            }
          }),
        );
        const head = await events.headPosition();
        await until(async () => (await events.headPosition()) > head + 100, 'more events under load', 20_000, 20);
        await server.kill9();
        stop = true;
        await load;
      }
      const last = await start(dataDir);
      const head = await events.headPosition();
      const reads = new SqliteReadStore(path.join(dataDir, 'read.db'));
      const fresh = new SqliteReadStore(path.join(build.tempDir('fresh-'), 'read.db'));
      try {
        await until(async () => {
          for (const p of projections) if ((await reads.checkpoint(p.name)) < head) return false;
          return true;
        }, 'the restarted projector to catch up', 30_000, 100);
        // Stop the server so nothing moves while both are compared.
        last.proc.kill('SIGTERM');
        expect((await last.exited).code).toBe(0);
        const end = await events.headPosition();
        await until(async () => {
          for (const p of projections) if ((await reads.checkpoint(p.name)) < end) return false;
          return true;
        }, 'checkpoints at the final head', 5000);
        const rebuild = new ProjectionRunner(events, fresh, projections);
        await rebuild.start();
        await rebuild.waitFor(end, 30_000);
        await rebuild.stop();
        for (const p of projections) {
          const c = collectionOf(p);
          const all = async (store: InstanceType<typeof SqliteReadStore>) => (await store.find(c)).map((d) => JSON.stringify(d)).sort();
          expect(await all(reads), c).toEqual(await all(fresh));
        }
        console.log(`kill -9 three times under load (${n} requests): read models equal a rebuild at position ${end}`);
      } finally {
        await reads.close();
        await fresh.close();
      }
    } finally {
      await events.close();
    }
  }, 150_000);
});
