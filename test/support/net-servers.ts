/**
 * A PostgreSQL and a Redis of the test's own, listening on addresses of a test network (the
 * machine's servers listen on loopback only): `initdb` into a temporary folder as the `postgres`
 * user, trust auth for the test subnet only; Redis with nothing persisted.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Redis } from 'ioredis';
import { until } from './until.js';

function pgBin(): string {
  const base = '/usr/lib/postgresql';
  const version = readdirSync(base).filter((v) => existsSync(path.join(base, v, 'bin/initdb'))).sort((a, b) => Number(b) - Number(a))[0];
  if (!version) throw new Error(`no PostgreSQL binaries under ${base}`);
  return path.join(base, version, 'bin');
}

const asPostgres = (cmd: string, args: string[]) => ['runuser', ['-u', 'postgres', '--', cmd, ...args]] as const;

export interface NetPostgres {
  url: string;
  stop(): Promise<void>;
}

/** PostgreSQL on `host`:5432, trust auth from `subnet` (CIDR) only. */
export async function startPostgres(host: string, subnet: string): Promise<NetPostgres> {
  const bin = pgBin();
  const dir = mkdtempSync(path.join(tmpdir(), 'ct-netpg-'));
  const uid = Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim());
  const gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim());
  chownSync(dir, uid, gid);
  const data = path.join(dir, 'data');
  const init = spawnSync(...asPostgres(path.join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync']), { encoding: 'utf8' });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
  appendFileSync(path.join(data, 'pg_hba.conf'), `host all all ${subnet} trust\n`);
  const server: ChildProcess = spawn(
    ...asPostgres(path.join(bin, 'postgres'), ['-D', data, '-k', dir, '-h', host, '-p', '5432', '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'max_connections=300']),
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  server.stderr!.on('data', (d) => (stderr += String(d)));
  const url = `postgres://postgres@${host}:5432/postgres`;
  await until(
    async () => {
      if (server.exitCode !== null) throw new Error(`postgres exited: ${stderr}`);
      const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
      c.on('error', () => {});
      try {
        await c.connect();
        return true;
      } finally {
        await c.end().catch(() => {});
      }
    },
    'the test PostgreSQL',
    30_000,
    100,
  );
  return {
    url,
    async stop() {
      // The postmaster's own pid (runuser's child): an immediate stop, nothing to keep.
      const pidFile = path.join(data, 'postmaster.pid');
      if (existsSync(pidFile)) {
        const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
        try {
          process.kill(pid, 'SIGQUIT');
        } catch {
          // Already gone.
        }
      }
      if (server.exitCode === null) await new Promise((r) => server.once('exit', r));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface NetRedis {
  url: string;
  stop(): Promise<void>;
}

/** Redis on `host`:6379, nothing saved. */
export async function startRedis(host: string): Promise<NetRedis> {
  const dir = mkdtempSync(path.join(tmpdir(), 'ct-netredis-'));
  const server = spawn('redis-server', ['--bind', host, '--port', '6379', '--save', '', '--appendonly', 'no', '--protected-mode', 'no', '--dir', dir], { stdio: 'ignore' });
  const url = `redis://${host}:6379`;
  await until(
    async () => {
      if (server.exitCode !== null) throw new Error('redis-server exited');
      const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      r.on('error', () => {});
      try {
        await r.connect();
        return (await r.ping()) === 'PONG';
      } finally {
        r.disconnect();
      }
    },
    'the test Redis',
    15_000,
    100,
  );
  return {
    url,
    async stop() {
      if (server.exitCode === null) {
        server.kill('SIGKILL');
        await new Promise((r) => server.once('exit', r));
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
