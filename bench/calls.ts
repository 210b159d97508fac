/**
 * Complete simulated calls per second: each call placed with POST /api/v1/calls, rung, answered by
 * the customer and a free agent, bridged, hung up (SIM_TALK_MS) and recorded, with its webhook record
 * built. `inFlight` calls are kept going at once (one agent each); latency is from the POST to the
 * CallEnded event. Runs on the embedded stores in a temporary DATA_DIR. The client runs in a worker
 * thread (calls-client.ts), so the platform's thread does the platform's work only.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { createPlatform } from '../src/platform.js';
import { applyProvisioning } from '../src/commands/provisioning/provision.js';
import { storeStats, workPer, workSnapshot, type WindowHooks, type WorkCounts } from './webhooks.js';
import type { CallsClientOptions, ClientMessage } from './calls-client.js';

export interface CallsBenchResult {
  /** Event-store appends and commits per call. */
  appendsPerCall: number;
  commitsPerCall: number;
  /** WAL syncs (fsyncs) of the event store per call: commits made together share one. */
  syncsPerCall: number;
  /** The rest of the work per call. */
  work: WorkCounts;
  calls: number;
  seconds: number;
  callsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  answered: number;
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

export async function benchCalls(options: { calls?: number; warmup?: number; inFlight?: number; window?: WindowHooks; databaseUrl?: string } = {}): Promise<CallsBenchResult> {
  const total = options.calls ?? 2000;
  const warmup = options.warmup ?? 400;
  const inFlight = options.inFlight ?? 20;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'ct-bench-calls-'));
  const config = loadConfig({
    EMBEDDED_THREADS: process.env.EMBEDDED_THREADS,
    PORT: '0',
    SOCKET_PORT: '0',
    DATA_DIR: dataDir,
    OPERATOR_TOKEN: 'bench',
    RATE_LIMIT_RPS: '0',
    LOG_LEVEL: 'silent',
    SIM_ANSWER_MS: '0',
    SIM_TALK_MS: '1',
    DATABASE_URL: options.databaseUrl,
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
    // Ends are matched to the POSTs the client reports; a call may end before its POST is answered.
    const placedAt = new Map<string, number>();
    const ends = new Map<string, { at: number; answered: boolean }>();
    const latencies: number[] = [];
    let answered = 0;
    let client!: Worker;
    const finish = (id: string) => {
      const t0 = placedAt.get(id);
      const end = ends.get(id);
      if (t0 === undefined || !end) return;
      placedAt.delete(id);
      ends.delete(id);
      if (end.answered) answered++;
      latencies.push(end.at - t0);
      client.postMessage({ ended: id });
    };
    const sub = platform.ctx.events.subscribeToAll({ after: await platform.ctx.events.headPosition() });
    const watching = (async () => {
      for await (const e of sub) {
        if (e.type !== 'CallEnded') continue;
        const d = e.data as { xnid: string; disposition: string };
        ends.set(d.xnid, { at: performance.timeOrigin + performance.now(), answered: d.disposition === 'answered' });
        finish(d.xnid);
      }
    })();
    /** One client run of `calls` calls; resolves when all have ended. */
    const run = (calls: number) =>
      new Promise<void>((resolve, reject) => {
        const clientOptions: CallsClientOptions = { url: httpUrl!, authorization: auth.authorization, total: calls, lanes: inFlight };
        client = new Worker(new URL('./calls-client.js', import.meta.url), { workerData: { calls: clientOptions } });
        client.on('message', (m: ClientMessage) => {
          if ('placed' in m) {
            placedAt.set(m.placed, m.at);
            finish(m.placed);
          } else if ('failed' in m) reject(new Error(m.failed));
          else resolve();
        });
        client.once('error', reject);
      }).finally(() => client.terminate());
    // A warm-up run first, as the http suite warms up: the measured figure is the steady state, not
    // the JIT compiling the call path (400 cold calls ran at about three quarters of the warm rate).
    if (warmup > 0) await run(warmup);
    latencies.length = 0;
    answered = 0;
    await options.window?.start?.();
    const before = workSnapshot(platform.ctx.events, platform.ctx.queue);
    const started = performance.now();
    await run(total);
    const seconds = (performance.now() - started) / 1000;
    const after = workSnapshot(platform.ctx.events, platform.ctx.queue);
    await options.window?.end?.();
    sub.close();
    await watching;
    latencies.sort((a, b) => a - b);
    return {
      appendsPerCall: (after.store.appends - before.store.appends) / latencies.length,
      commitsPerCall: (after.store.commits - before.store.commits) / latencies.length,
      syncsPerCall: (after.store.syncs - before.store.syncs) / latencies.length,
      work: workPer(before, after, latencies.length),
      calls: latencies.length, seconds, callsPerSecond: latencies.length / seconds, p50Ms: quantile(latencies, 0.5), p99Ms: quantile(latencies, 0.99), answered };
  } finally {
    await platform.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
