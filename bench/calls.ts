/**
 * Complete simulated calls per second: each call placed with POST /api/v1/calls, rung, answered by
 * the customer and a free agent, bridged, hung up (SIM_TALK_MS) and recorded, with its webhook record
 * built. `inFlight` calls are kept going at once (one agent each); latency is from the POST to the
 * CallEnded event. Runs on the embedded stores in a temporary DATA_DIR.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { createPlatform } from '../src/platform.js';
import { applyProvisioning } from '../src/commands/provisioning/provision.js';
import { storeStats } from './webhooks.js';

export interface CallsBenchResult {
  /** Event-store appends and commits per call. */
  appendsPerCall: number;
  commitsPerCall: number;
  /** WAL syncs (fsyncs) of the event store per call: commits made together share one. */
  syncsPerCall: number;
  calls: number;
  seconds: number;
  callsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  answered: number;
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

export async function benchCalls(options: { calls?: number; inFlight?: number } = {}): Promise<CallsBenchResult> {
  const total = options.calls ?? 400;
  const inFlight = options.inFlight ?? 20;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'ct-bench-calls-'));
  const config = loadConfig({
    PORT: '0',
    SOCKET_PORT: '0',
    DATA_DIR: dataDir,
    OPERATOR_TOKEN: 'bench',
    RATE_LIMIT_RPS: '0',
    LOG_LEVEL: 'silent',
    SIM_ANSWER_MS: '0',
    SIM_TALK_MS: '1',
  });
  const platform = await createPlatform(config, { logger: pino({ level: 'silent' }) });
  try {
    const { httpUrl } = await platform.start();
    const agents = Array.from({ length: inFlight }, (_, i) => ({ id: 5000 + i, name: `Agent ${i}`, number: `91555${String(i).padStart(5, '2')}`, sip: `a${i}` }));
    const prov = await applyProvisioning(platform.ctx.events, {
      services: [{ id: 1, name: 'Bench', customer: 'bench', timezone: 'UTC', dids: ['8000000001'], agents }],
      users: [{ id: 1, username: 'bench', password: 'bench-password', admin: true, services: [1] }],
    });
    await platform.ctx.sync.waitFor(prov.position);
    const auth = { authorization: `Basic ${Buffer.from('bench:bench-password').toString('base64')}` };
    for (const a of agents) {
      const res = await fetch(`${httpUrl}/api/v1/agents?status=0&agent-number=${a.number}`, { method: 'PATCH', headers: auth });
      if (res.status !== 200) throw new Error(`agent login failed: ${res.status}`);
    }
    // A call may end before its POST has answered: keep outcomes until someone asks.
    const ended = new Map<string, (answered: boolean) => void>();
    const outcomes = new Map<string, boolean>();
    const sub = platform.ctx.events.subscribeToAll({ after: await platform.ctx.events.headPosition() });
    const watching = (async () => {
      for await (const e of sub) {
        if (e.type !== 'CallEnded') continue;
        const d = e.data as { xnid: string; disposition: string };
        const waiter = ended.get(d.xnid);
        if (waiter) waiter(d.disposition === 'answered');
        else outcomes.set(d.xnid, d.disposition === 'answered');
      }
    })();
    const before = storeStats(platform.ctx.events);
    const latencies: number[] = [];
    let answered = 0;
    let placed = 0;
    const started = performance.now();
    const worker = async () => {
      while (placed < total) {
        placed++;
        const t0 = performance.now();
        const res = await fetch(`${httpUrl}/api/v1/calls`, { method: 'POST', headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' }, body: `number=98${String(placed).padStart(8, '7')}` });
        if (res.status !== 200) throw new Error(`POST /calls: ${res.status} ${await res.text()}`);
        const { id } = (await res.json()) as { id: string };
        const ok = outcomes.has(id) ? outcomes.get(id)! : await new Promise<boolean>((resolve) => ended.set(id, resolve));
        outcomes.delete(id);
        ended.delete(id);
        if (ok) answered++;
        latencies.push(performance.now() - t0);
      }
    };
    await Promise.all(Array.from({ length: inFlight }, worker));
    const seconds = (performance.now() - started) / 1000;
    sub.close();
    await watching;
    latencies.sort((a, b) => a - b);
    const after = storeStats(platform.ctx.events);
    return {
      appendsPerCall: (after.appends - before.appends) / latencies.length,
      commitsPerCall: (after.commits - before.commits) / latencies.length,
      syncsPerCall: (after.syncs - before.syncs) / latencies.length,
      calls: latencies.length, seconds, callsPerSecond: latencies.length / seconds, p50Ms: quantile(latencies, 0.5), p99Ms: quantile(latencies, 0.99), answered };
  } finally {
    await platform.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
