/**
 * The platform's life as a process: restarts on the same DATA_DIR, kill -9 right after an
 * acknowledged write, graceful SIGTERM with a request in flight, and the operator CLI.
 * The child processes run the compiled code, built once into a temporary directory.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATOR_TOKEN, exampleDoc, startProvisioned, startServer } from '../support/server.js';
import { SqliteEventStore } from '../../src/gateways/event-store/sqlite.js';
import { MongoDouble } from '../support/mongo-double/server.js';
import { engineEnv, engineStream, onEngines } from '../support/engines.js';
import { PlatformProcess, basic, buildPlatform, type Build } from '../support/processes.js';

let build: Build;
let work: string;

beforeAll(() => {
  build = buildPlatform();
  work = build.dir;
}, 120_000);

afterAll(() => {
  build.remove();
});

const newDataDir = () => build.tempDir('data-');
const writeDoc = (doc: unknown) => build.writeJson(doc, 'provisioning.json');

/** The server as a real child process on `dataDir`: E2E_ENGINES=doubles runs it on the same engine doubles as a startServer there. */
const startProcess = async (dataDir: string, env: Record<string, string> = {}) => PlatformProcess.start(build, 'server', { DATA_DIR: dataDir, ...(await engineEnv(dataDir)), ...env });

describe('restart on the same DATA_DIR', () => {
  it('keeps users, their changed passwords and profiles', async () => {
    const first = await startProvisioned();
    const dataDir = first.dataDir;
    try {
      expect((await first.api('/api/v1/user-password', { method: 'POST', form: { new: 'changed-before-restart' }, auth: ['asha', 's3cret-asha'] })).status).toBe(200);
      expect((await first.api('/api/v1/user', { method: 'POST', form: { email: 'kept@acme.test' } })).status).toBe(200);
      await first.platform.stop();

      const second = await startServer({}, { dataDir });
      try {
        expect((await second.api('/api/v1/ping', { auth: ['asha', 'changed-before-restart'] })).status).toBe(200);
        expect((await second.api('/api/v1/ping', { auth: ['asha', 's3cret-asha'] })).status).toBe(401);
        const admin = await second.api('/api/v1/user');
        expect(admin.status).toBe(200);
        expect((await admin.json()).email).toBe('kept@acme.test');
        // Nothing was projected twice on the way back up.
        const users = await second.platform.ctx.reads.find('users');
        expect(users.map((u) => u.username)).toEqual(['acme-admin', 'asha']);
      } finally {
        await second.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('the server as a process', () => {
  it('kill -9 right after an acknowledged POST /api/v1/user-password loses nothing', async () => {
    const dataDir = newDataDir();
    const server = await startProcess(dataDir, { PROVISION_FILE: writeDoc(exampleDoc()) });
    const admin = basic('acme-admin', 's3cret-admin');
    for (let i = 1; i <= 5; i++) {
      const res = await server.fetch('/api/v1/user', { method: 'POST', headers: { ...admin, 'content-type': 'application/json' }, body: JSON.stringify({ email: `admin${i}@acme.test` }) });
      expect(res.status).toBe(200);
    }
    const ack = await server.fetch('/api/v1/user-password', { method: 'POST', headers: { ...basic('asha', 's3cret-asha'), 'content-type': 'application/x-www-form-urlencoded' }, body: 'new=survives-kill-9' });
    expect(ack.status).toBe(200);
    server.proc.kill('SIGKILL');
    expect(await server.exited).toEqual({ code: null, signal: 'SIGKILL' });

    const after = await startServer({}, { dataDir });
    try {
      expect((await after.api('/api/v1/ping', { auth: ['asha', 'survives-kill-9'] })).status).toBe(200);
      expect((await after.api('/api/v1/ping', { auth: ['asha', 's3cret-asha'] })).status).toBe(401);
      expect((await (await after.api('/api/v1/user')).json()).email).toBe('admin5@acme.test');
    } finally {
      await after.stop();
    }
  });

  // With and without the embedded stores' threads (EMBEDDED_THREADS: auto is off on a 2-core machine).
  it.each(['off', 'on'])('kill -9 during a burst of grouped commands loses no acknowledged one (EMBEDDED_THREADS=%s)', async (threads) => {
    const dataDir = newDataDir();
    const server = await startProcess(dataDir, { PROVISION_FILE: writeDoc(exampleDoc()), EMBEDDED_THREADS: threads });
    const admin = { ...basic('acme-admin', 's3cret-admin'), 'content-type': 'application/x-www-form-urlencoded' };
    const acknowledged: string[] = [];
    let killed = false;
    // 8 clients send SMS requests back to back (each one a new stream, so appends group together);
    // the process is killed once 60 are acknowledged, while others are in flight.
    const client = async () => {
      while (!killed) {
        try {
          const res = await server.fetch('/api/v1/send-sms', { method: 'POST', headers: admin, body: 'number=%2B14155550100&message=burst&service-id=101' });
          if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
          acknowledged.push(await res.text());
          if (acknowledged.length >= 60 && !killed) {
            killed = true;
            server.proc.kill('SIGKILL');
          }
        } catch (err) {
          if (!killed) throw err;
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, client));
    expect(await server.exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(acknowledged.length).toBeGreaterThanOrEqual(60);

    const store = new SqliteEventStore(path.join(dataDir, 'events.db'));
    const readStream = async (id: string) => (await engineStream(dataDir, id)) ?? (await store.readStream(id));
    try {
      for (const id of acknowledged) expect((await readStream(`sms-${id}`)).map((e) => e.type)).toContain('SmsRequested');
    } finally {
      await store.close();
    }
  });

  it.each(['off', 'on'])('two processes on one DATA_DIR: every command decides on the last acknowledged write, whichever process made it (EMBEDDED_THREADS=%s)', async (threads) => {
    const dataDir = newDataDir();
    const a = await startProcess(dataDir, { PROVISION_FILE: writeDoc(exampleDoc()), EMBEDDED_THREADS: threads });
    const b = await startProcess(dataDir, { ROLES: 'api', EMBEDDED_THREADS: threads });
    const admin = basic('acme-admin', 's3cret-admin');
    try {
      // Alternating processes and break codes: each process's cached agent is behind the other's
      // write every time. A stale state would decide "already on that break" and append nothing.
      for (let i = 0; i < 12; i++) {
        const [server, code] = i % 2 === 0 ? [a, 1 + (i % 4)] : [b, 5];
        const res = await server.fetch(`/api/v1/agents?break=${code}&agent-number=9100001001`, { method: 'PATCH', headers: admin });
        expect(res.status).toBe(200);
        expect(await res.json()).toMatchObject({ break: code });
      }
    } finally {
      a.proc.kill('SIGTERM');
      b.proc.kill('SIGTERM');
      await Promise.all([a.exited, b.exited]);
    }
    const store = new SqliteEventStore(path.join(dataDir, 'events.db'));
    const readStream = async (id: string) => (await engineStream(dataDir, id)) ?? (await store.readStream(id));
    try {
      const started = (await readStream('agent-101-1001')).filter((e) => e.type === 'AgentBreakStarted');
      expect(started.map((e) => (e.data as { code: number }).code)).toEqual([1, 5, 3, 5, 1, 5, 3, 5, 1, 5, 3, 5]);
    } finally {
      await store.close();
    }
  });

  it('SIGTERM finishes the request in flight, then exits with code 0', async () => {
    const dataDir = newDataDir();
    const server = await startProcess(dataDir, { LOG_LEVEL: 'debug' });
    // A document whose many password hashes keep the request busy for a second or more.
    const doc = exampleDoc();
    for (let i = 0; i < 30; i++) doc.users.push({ id: 100 + i, username: `bulk-${i}`, password: `bulk-password-${i}`, services: [101] });
    const response = server.fetch('/ops/v1/provisioning', { method: 'PUT', headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(doc) });
    const incoming = await server.waitForLine((l) => l.msg === 'request received' && l.route === '/ops/v1/provisioning');
    server.proc.kill('SIGTERM');

    const res = await response;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ services: 1, agents: 1, users: 32 });
    expect(await server.exited).toEqual({ code: 0, signal: null });
    // The request was still running when the signal arrived.
    const shuttingDown = server.lines.findIndex((l) => l.msg === 'shutting down');
    const completed = server.lines.findIndex((l) => l.msg === 'request' && l.reqId === incoming.reqId && l.status === 200);
    expect(shuttingDown).toBeGreaterThanOrEqual(0);
    expect(completed).toBeGreaterThan(shuttingDown);
    await expect(server.fetch('/api/v1/ping')).rejects.toThrow();

    const after = await startServer({}, { dataDir });
    try {
      expect((await after.api('/api/v1/ping', { auth: ['bulk-29', 'bulk-password-29'] })).status).toBe(200);
    } finally {
      await after.stop();
    }
  });
});

describe('telephony CLI', () => {
  const cli = (args: string[], dataDir: string) =>
    spawnSync(process.execPath, [build.cli, ...args], {
      env: { PATH: process.env.PATH, DATA_DIR: dataDir, LOG_LEVEL: 'silent' },
      encoding: 'utf8',
      timeout: 30_000,
    });

  // The CLI runs under spawnSync: the in-process engine doubles could not answer it meanwhile.
  it.skipIf(onEngines)('provision FILE on a DATA_DIR; a server started on it authenticates the provisioned users', async () => {
    const dataDir = newDataDir();
    const file = writeDoc(exampleDoc());
    const first = cli(['provision', file], dataDir);
    expect(first.stderr).toBe('');
    expect(first.status).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ services: 1, agents: 1, users: 2 });
    expect(JSON.parse(first.stdout).appended).toBeGreaterThan(0);
    const again = cli(['provision', file], dataDir);
    expect(again.status).toBe(0);
    expect(JSON.parse(again.stdout).appended).toBe(0);

    const server = await startServer({}, { dataDir });
    try {
      expect((await server.api('/api/v1/ping')).status).toBe(200);
      expect(await (await server.api('/api/v1/login', { auth: ['asha', 's3cret-asha'] })).json()).toEqual({ agentId: 1001, isAdmin: false, serviceId: 101 });

      // With the server running: the next request already sees what the CLI appended.
      const more = writeDoc({ services: [], users: [{ id: 5, username: 'late-user', password: 'late-password', services: [101] }] });
      expect(cli(['provision', more], dataDir).status).toBe(0);
      expect((await server.api('/api/v1/ping', { auth: ['late-user', 'late-password'] })).status).toBe(200);
    } finally {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  // The CLI runs under spawnSync: the in-process engine doubles could not answer it meanwhile.
  it.skipIf(onEngines)('replay rebuilds the read models of a stopped server: the contract\'s last line, exit 0; export calls works without a server', async () => {
    const dataDir = newDataDir();
    try {
      expect(cli(['provision', writeDoc(exampleDoc())], dataDir).status).toBe(0);
      const server = await startServer({}, { dataDir });
      const before = await (await server.api('/api/v1/agents')).text();
      const head = await server.platform.ctx.events.headPosition();
      await server.stop({ keepData: true });
      const r = cli(['replay'], dataDir);
      expect(r.status).toBe(0);
      const lines = r.stdout.trim().split('\n');
      expect(lines[lines.length - 1]).toMatch(new RegExp(`^replayed ${head} events in \\d+(\\.\\d+)? s$`));
      const exported = cli(['export', 'calls', '--svc', '101', '--format', 'jsonl'], dataDir);
      expect([exported.status, exported.stdout]).toEqual([0, '']);
      expect(cli(['export', 'calls'], dataDir).status).toBe(2);
      const again = await startServer({}, { dataDir });
      expect(await (await again.api('/api/v1/agents')).text()).toBe(before);
      await again.stop({ keepData: true });
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);

  it('refuses a bad document with exit code 1 and a message naming the field; bad usage is 2', () => {
    const dataDir = newDataDir();
    const doc = exampleDoc();
    doc.users[1].agentId = 4242;
    const bad = cli(['provision', writeDoc(doc)], dataDir);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('users[1].agentId');
    expect(cli(['provision', path.join(work, 'missing.json')], dataDir).status).toBe(2);
    const usage = cli(['frobnicate'], dataDir);
    expect(usage.status).toBe(2);
    expect(usage.stderr).toContain('unknown command "frobnicate"');
  });
});

describe('the server as a process on MONGODB_URL (the MongoDB wire-protocol double, not a MongoDB server)', () => {
  it('starts on it, keeps its read models there across kill -9, and stops on SIGTERM with code 0', async () => {
    const double = new MongoDouble();
    await double.start();
    try {
      const env = { MONGODB_URL: double.url('lifecycle') };
      const dataDir = newDataDir();
      const asha = basic('asha', 's3cret-asha');
      const admin = basic('acme-admin', 's3cret-admin');
      const first = await startProcess(dataDir, { ...env, PROVISION_FILE: writeDoc(exampleDoc()) });
      const res = await first.fetch('/api/v1/agents?break=3', { method: 'PATCH', headers: asha });
      expect([res.status, await res.json()]).toEqual([200, { status: 0, break: 3 }]);
      expect(existsSync(path.join(dataDir, 'read.db'))).toBe(false);
      expect(double.documents('lifecycle', 'agents').map((d) => d._id)).toEqual(['101-1001']);
      first.proc.kill('SIGKILL');
      expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });

      const second = await startProcess(dataDir, env);
      const dashboard = await (await second.fetch('/api/v1/dashboard?svc-id=101', { headers: admin })).json();
      expect(dashboard.agentsData.find((a: { id: number }) => a.id === 1001).status).toBe('3');
      second.proc.kill('SIGTERM');
      expect(await second.exited).toEqual({ code: 0, signal: null });
    } finally {
      await double.stop();
    }
  });
});
