/**
 * Command latency against the length of a stream: one agent's stream holds `events` events (break
 * toggles appended straight to the log), another's is fresh; each gets `commands` break toggles from
 * one client, one at a time. Then the platform restarts on the same DATA_DIR and the first command on
 * the long stream is timed (a cold cache: the snapshot bounds what it folds).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { createPlatform, type Platform } from '../src/platform.js';
import { applyProvisioning } from '../src/commands/provisioning/provision.js';
import { streams } from '../src/domain/streams.js';

export interface HistoryBenchResult {
  events: number;
  fresh: { p50: number; p99: number };
  long: { p50: number; p99: number };
  coldMs: number;
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
const auth = { authorization: `Basic ${Buffer.from('hist:hist-password').toString('base64')}` };

async function start(dataDir: string): Promise<{ platform: Platform; url: string }> {
  const config = loadConfig({ EMBEDDED_THREADS: process.env.EMBEDDED_THREADS, HOST: '127.0.0.1', PORT: '0', SOCKET_PORT: '0', DATA_DIR: dataDir, OPERATOR_TOKEN: 'bench', RATE_LIMIT_RPS: '0', LOG_LEVEL: 'silent' });
  const platform = await createPlatform(config, { logger: pino({ level: 'silent' }) });
  const { httpUrl } = await platform.start();
  return { platform, url: httpUrl! };
}

async function toggle(url: string, number: string, n: number): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${url}/api/v1/agents?svc-id=1&break=${n % 2 === 0 ? 1 : 0}&agent-number=${number}`, { method: 'PATCH', headers: auth });
  if (res.status !== 200) throw new Error(`PATCH /agents: ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
  return performance.now() - t0;
}

async function latencies(url: string, number: string, commands: number) {
  const all: number[] = [];
  for (let i = 0; i < commands; i++) all.push(await toggle(url, number, i));
  all.sort((a, b) => a - b);
  return { p50: quantile(all, 0.5), p99: quantile(all, 0.99) };
}

export async function benchHistory(options: { events?: number; commands?: number } = {}): Promise<HistoryBenchResult> {
  const events = options.events ?? 20_000;
  const commands = options.commands ?? 300;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'ct-bench-history-'));
  try {
    let { platform, url } = await start(dataDir);
    try {
      const prov = await applyProvisioning(platform.ctx.events, {
        services: [
          {
            id: 1,
            name: 'History',
            customer: 'bench',
            timezone: 'UTC',
            dids: ['8000000301'],
            agents: [
              { id: 1, name: 'Long', number: '9300000001', sip: 'long' },
              { id: 2, name: 'Fresh', number: '9300000002', sip: 'fresh' },
            ],
          },
        ],
        users: [{ id: 1, username: 'hist', password: 'hist-password', admin: true, services: [1] }],
      });
      await platform.ctx.sync.waitFor(prov.position);
      // The long history, as years of break toggles would leave it.
      const stream = streams.agent(1, 1);
      const have = (await platform.ctx.events.readStream(stream)).length;
      let time = Date.now() - 365 * 24 * 3600 * 1000;
      for (let n = have; n < events; ) {
        const batch = Array.from({ length: Math.min(1000, events - n) }, (_, i) =>
          (n + i) % 2 === 0 ? { type: 'AgentBreakStarted', data: { svcId: 1, agentId: 1, time: ++time, code: 1 } } : { type: 'AgentBreakEnded', data: { svcId: 1, agentId: 1, time: ++time } },
        );
        await platform.ctx.events.appendToStream(stream, batch);
        n += batch.length;
      }
      await platform.ctx.sync.waitFor(await platform.ctx.events.headPosition(), 120_000);
      // The first command folds the history once (and leaves a snapshot); then the steady state.
      await toggle(url, '9300000001', events % 2 === 0 ? 0 : 1);
      const fresh = await latencies(url, '9300000002', commands);
      const long = await latencies(url, '9300000001', commands);
      await platform.stop();
      ({ platform, url } = await start(dataDir));
      const coldMs = await toggle(url, '9300000001', 0);
      return { events: (await platform.ctx.events.readStream(stream, { fromRevision: 0 })).length, fresh, long, coldMs };
    } finally {
      await platform.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}
