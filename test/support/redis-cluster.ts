/**
 * A real three-master Redis Cluster on loopback, started by a test and removed after: three
 * `redis-server --cluster-enabled yes` on free ports in 17100-17199 (a range no other test uses),
 * each with its own config file in a temporary folder, joined by `redis-cli --cluster create`.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';

const run = promisify(execFile);

export interface RedisClusterHandle {
  ports: number[];
  /** `redis+cluster://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3` as REDIS_URL takes it. */
  url: string;
  stop(): Promise<void>;
}

/** Whether the Redis binaries are here (`null`) or why the cluster cannot be started. */
export async function clusterUnavailable(): Promise<string | null> {
  for (const bin of ['redis-server', 'redis-cli']) {
    try {
      await run(bin, ['--version']);
    } catch {
      return `${bin} is not installed`;
    }
  }
  return null;
}

const free = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });

/** Three ports in 17100-17199, each free with its cluster bus port (+10000), from a random start. */
async function pickPorts(): Promise<number[]> {
  const start = Math.floor(Math.random() * 100);
  const out: number[] = [];
  for (let i = 0; i < 100 && out.length < 3; i++) {
    const p = 17100 + ((start + i) % 100);
    if ((await free(p)) && (await free(p + 10000))) out.push(p);
  }
  if (out.length < 3) throw new Error('no three free ports in 17100-17199 for the Redis Cluster');
  return out;
}

async function until(check: () => Promise<boolean>, what: string, ms = 20_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`Redis Cluster: ${what} not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function startRedisCluster(): Promise<RedisClusterHandle> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ct-redis-cluster-'));
  const ports = await pickPorts();
  const servers: ChildProcess[] = ports.map((port) =>
    spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-config-file', path.join(dir, `nodes-${port}.conf`), '--dir', dir, '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    ),
  );
  const stop = async () => {
    for (const s of servers) if (s.exitCode === null) s.kill('SIGKILL');
    await Promise.all(servers.map((s) => (s.exitCode === null && s.signalCode === null ? new Promise((r) => s.once('exit', r)) : null)));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const ping = async (port: number) => {
      const r = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      r.on('error', () => {});
      try {
        await r.connect();
        return (await r.ping()) === 'PONG';
      } finally {
        r.disconnect();
      }
    };
    for (const p of ports) await until(() => ping(p), `node ${p} to answer`);
    await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes']);
    // Every node must see every slot served before clients use it.
    for (const port of ports) {
      await until(async () => {
        const r = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
        r.on('error', () => {});
        try {
          await r.connect();
          return /cluster_state:ok/.test(String(await r.cluster('INFO')));
        } finally {
          r.disconnect();
        }
      }, `node ${port} to report cluster_state:ok`);
    }
    return { ports, url: `redis+cluster://${ports.map((p) => `127.0.0.1:${p}`).join(',')}`, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
