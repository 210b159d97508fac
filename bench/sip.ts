/**
 * Complete calls over SIP (CONTRACT 16, issue 31): the platform with SWITCH=sip and SIPp as the
 * carrier (test/sipp/trunk-uas.xml), each call placed with POST /api/v1/calls, INVITEd at the trunk,
 * answered, bridged (re-INVITEs), hung up by the client once bridged, and its webhook record built.
 * Calls are placed open-loop at a rate raised step by step until one fails. Post-dial delay: from
 * the POST to the customer's INVITE leaving for the trunk (on loopback, its arrival).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import dgram from 'node:dgram';
import net from 'node:net';
import { PerformanceObserver, monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { createPlatform } from '../src/platform.js';
import { applyProvisioning } from '../src/commands/provisioning/provision.js';
import type { SipSwitch } from '../src/gateways/switch/sip/sip-switch.js';
import type { SipMessage } from '../src/gateways/switch/sip/message.js';
import type { Peer } from '../src/gateways/switch/sip/transport.js';
import type { SipClientOptions, SipClientOrder, SipClientReport } from './sip-client.js';
import { storeStats, threadCpuMs } from './webhooks.js';
import type { CheckpointStats, WalCheckpointer } from '../src/gateways/wal-checkpointer.js';

export interface SipStep {
  rate: number;
  calls: number;
  failed: number;
  callsPerSecond: number;
  pddP50: number;
  pddP99: number;
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
const now = () => performance.timeOrigin + performance.now();

/** The log's and read.db's checkpoint threads' counts, summed (zeros where the stores have none). */
async function checkpointStats(platform: { ctx: { events: object; reads: object } }): Promise<CheckpointStats> {
  const of = (o: object | undefined) => (o as { checkpointer?: WalCheckpointer | null } | undefined)?.checkpointer ?? null;
  const all = await Promise.all([of(platform.ctx.events), of((platform.ctx.reads as { inner?: object }).inner)].map((c) => c?.stats()));
  const sum: CheckpointStats = { checkpoints: 0, totalMs: 0, maxMs: 0, frames: 0 };
  for (const s of all) if (s) (sum.checkpoints += s.checkpoints), (sum.totalMs += s.totalMs), (sum.maxMs = Math.max(sum.maxMs, s.maxMs)), (sum.frames += s.frames);
  return sum;
}

async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 40_000);
    const ok = await new Promise<boolean>((resolve) => {
      const udp = dgram.createSocket('udp4');
      udp.once('error', () => resolve(false));
      udp.bind(port, '127.0.0.1', () => {
        const tcp = net.createServer();
        tcp.once('error', () => udp.close(() => resolve(false)));
        tcp.listen(port, '127.0.0.1', () => tcp.close(() => udp.close(() => resolve(true))));
      });
    });
    if (ok) return port;
  }
}

/** CPU time (ms) of a process so far, from /proc (10 ms ticks); 0 where there is none. */
function pidCpuMs(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return 0;
  }
}

export async function benchSip(options: { rates?: number[]; seconds?: number } = {}): Promise<{ steps: SipStep[]; best: SipStep | null }> {
  if (!existsSync('/usr/bin/sipp')) throw new Error('sipp is not installed (Debian package sip-tester)');
  const rates = options.rates ?? [50, 100, 200, 300, 400];
  const seconds = options.seconds ?? 3;
  const trunkPort = await freePort();
  const trunk = spawn('/usr/bin/sipp', ['-sf', path.resolve(import.meta.dirname, '../../test/sipp/trunk-uas.xml'), '-i', '127.0.0.1', '-p', String(trunkPort), '-t', 'u1', '-cp', String(await freePort()), '-mp', String(await freePort()), '-nostdin', '-max_socket', '10000'], { stdio: 'ignore' });
  const dataDir = mkdtempSync(path.join(tmpdir(), 'ct-bench-sip-'));
  const config = loadConfig({
    EMBEDDED_THREADS: process.env.EMBEDDED_THREADS,
    PORT: '0',
    SOCKET_PORT: '0',
    DATA_DIR: dataDir,
    OPERATOR_TOKEN: 'bench',
    RATE_LIMIT_RPS: '0',
    LOG_LEVEL: 'silent',
    SWITCH: 'sip',
    SIP_HOST: '127.0.0.1',
    SIP_PORT: String(await freePort()),
    SIP_TRUNK: `127.0.0.1:${trunkPort}`,
    SIP_RING_TIMEOUT_MS: '10000',
  });
  const platform = await createPlatform(config, { logger: pino({ level: 'silent' }) });
  try {
    const { httpUrl } = await platform.start();
    const agents = Array.from({ length: 100 }, (_, i) => ({ id: 6000 + i, name: `Agent ${i}`, number: `91666${String(i).padStart(5, '3')}`, sip: `s${i}` }));
    const prov = await applyProvisioning(platform.ctx.events, {
      services: [{ id: 1, name: 'Bench', customer: 'bench', timezone: 'UTC', dids: ['8000000001'], agents }],
      users: [{ id: 1, username: 'bench', password: 'bench-password', admin: true, services: [1] }],
    });
    await platform.ctx.sync.waitFor(prov.position);
    const authorization = `Basic ${Buffer.from('bench:bench-password').toString('base64')}`;
    for (const a of agents) {
      const res = await fetch(`${httpUrl}/api/v1/agents?status=0&agent-number=${a.number}`, { method: 'PATCH', headers: { authorization } });
      if (res.status !== 200) throw new Error(`agent login failed: ${res.status}`);
    }
    // The INVITEs leaving for the trunk, by the number dialled (bench only: the switch is the call flow's).
    const sw = (platform.callFlow as unknown as { sw: SipSwitch }).sw;
    const inviteAt = new Map<string, number>();
    const transport = sw.transport;
    const send = transport.send.bind(transport);
    transport.send = (m: SipMessage, to: Peer) => {
      if (m.kind === 'request' && m.method === 'INVITE' && !/;\s*tag=/.test(m.headers.find(([n]) => n === 'to')?.[1] ?? '')) {
        const user = /^sip:([^@]+)@/.exec(m.uri)?.[1];
        if (user && !inviteAt.has(user)) inviteAt.set(user, now());
      }
      send(m, to);
    };
    // The read store's transactions on this thread (bench only; none are counted with EMBEDDED_THREADS on).
    const readTx = { n: 0 };
    const writes = (platform.ctx.reads as { inner?: { writes?: Record<'commit' | 'put' | 'delete' | 'insertIfAbsent', (...a: unknown[]) => unknown> } }).inner?.writes;
    if (writes) {
      for (const m of ['commit', 'put', 'delete', 'insertIfAbsent'] as const) {
        const f = writes[m].bind(writes);
        writes[m] = (...a: unknown[]) => (readTx.n++, f(...a));
      }
    }
    const ended = new Map<string, boolean>();
    let hangup: (xnid: string) => void = () => undefined;
    // When each call's CallStarted is read by a subscription like the worker's (BENCH_SIP_BREAKDOWN=1).
    const startedSeen = new Map<string, number>();
    const sub = platform.ctx.events.subscribeToAll({ after: await platform.ctx.events.headPosition() });
    const watching = (async () => {
      for await (const e of sub) {
        if (e.type === 'CallStarted') startedSeen.set((e.data as { xnid: string }).xnid, now());
        else if (e.type === 'CallBridged') {
          hangup((e.data as { xnid: string }).xnid);
        } else if (e.type === 'CallEnded') {
          const d = e.data as { xnid: string; disposition: string; webhook?: unknown };
          ended.set(d.xnid, d.disposition === 'answered' && d.webhook !== undefined);
        }
      }
    })();
    // The HTTP client runs on a thread of its own (sip-client.ts): this thread is the platform's.
    const client = new Worker(new URL('./sip-client.js', import.meta.url), { workerData: { sip: { url: httpUrl!, authorization } satisfies SipClientOptions } });
    client.unref();
    hangup = (xnid) => client.postMessage({ hangup: xnid } satisfies SipClientOrder);
    let seq = 0;
    const step = async (rate: number, secs: number): Promise<SipStep> => {
      const total = Math.round(rate * secs);
      const loopDelay = monitorEventLoopDelay({ resolution: 5 });
      loopDelay.enable();
      // GC pauses on this thread during the step, and the WAL checkpoints off it (wal-checkpointer.ts).
      const gc: number[] = [];
      const gcWatch = new PerformanceObserver((list) => void gc.push(...list.getEntries().map((e) => e.duration)));
      gcWatch.observe({ entryTypes: ['gc'] });
      const ckpt0 = await checkpointStats(platform);
      const placed: Array<{ number: string; at: number; answered: number; id: string | null }> = [];
      const first = seq + 1;
      seq += total;
      const t0 = now();
      const cpu0 = process.cpuUsage();
      const thread0 = threadCpuMs();
      const sipp0 = pidCpuMs(trunk.pid);
      const store0 = storeStats(platform.ctx.events);
      const readTx0 = readTx.n;
      const elu0 = performance.eventLoopUtilization();
      await new Promise<void>((resolve) => {
        const onReport = (m: SipClientReport) => {
          if ('placed' in m) return void placed.push({ number: m.placed, at: m.at, answered: m.answered, id: m.id });
          client.off('message', onReport);
          resolve();
        };
        client.on('message', onReport);
        client.postMessage({ step: { rate, total, first } } satisfies SipClientOrder);
      });
      const ids = placed.map((p) => p.id);
      const deadline = now() + 15_000;
      while (now() < deadline && !ids.every((id) => id !== null && ended.has(id))) await new Promise((r) => setTimeout(r, 20));
      loopDelay.disable();
      gcWatch.disconnect();
      const ckpt = await checkpointStats(platform);
      const cpu = process.cpuUsage(cpu0);
      const threadMs = threadCpuMs() - thread0;
      const sippMs = pidCpuMs(trunk.pid) - sipp0;
      const store1 = storeStats(platform.ctx.events);
      const elu = performance.eventLoopUtilization(elu0);
      const elapsed = (now() - t0) / 1000;
      const failed = ids.filter((id) => id === null || ended.get(id) !== true).length;
      const pdd = placed.map((p) => (inviteAt.get(p.number) ?? Infinity) - p.at).sort((a, b) => a - b);
      if (process.env.BENCH_SIP_BREAKDOWN) {
        // Where the delay goes: the event loop's own delay, then each segment from the POST's sending.
        const seg = (f: (p: (typeof placed)[number]) => number) => {
          const v = placed.map(f).filter(Number.isFinite).sort((a, b) => a - b);
          return `p50 ${quantile(v, 0.5).toFixed(1)} p99 ${quantile(v, 0.99).toFixed(1)}`;
        };
        const ms = (ns: number) => (ns / 1e6).toFixed(1);
        console.error(
          `sip breakdown at ${rate} calls/s: CPU a call: the platform's thread ${(threadMs / total).toFixed(2)} ms, this process (all threads, the HTTP client's included) ${((cpu.user + cpu.system) / 1000 / total).toFixed(2)} ms, SIPp ${(sippMs / total).toFixed(2)} ms; ` +
            `events ${((store1.appends - store0.appends) / total).toFixed(1)} a call in ${((store1.commits - store0.commits) / total).toFixed(2)} commits, read store transactions ${((readTx.n - readTx0) / total).toFixed(2)} a call; event loop utilisation ${elu.utilization.toFixed(2)}; event loop delay p50 ${ms(loopDelay.percentile(50))} p99 ${ms(loopDelay.percentile(99))} max ${ms(loopDelay.max)}; ` +
            `GC pauses ${gc.length}, ${gc.reduce((a, b) => a + b, 0).toFixed(0)} ms in all, max ${Math.max(0, ...gc).toFixed(1)} ms; ` +
            `WAL checkpoints off the loop ${ckpt.checkpoints - ckpt0.checkpoints}, ${(ckpt.totalMs - ckpt0.totalMs).toFixed(0)} ms in all, max ${ckpt.maxMs.toFixed(1)} ms (since start); ` +
            `CallStarted read ${seg((p) => (startedSeen.get(p.id ?? '') ?? NaN) - p.at)}; INVITE sent ${seg((p) => (inviteAt.get(p.number) ?? NaN) - p.at)}; POST answered ${seg((p) => p.answered - p.at)}`,
        );
      }
      return { rate, calls: total, failed, callsPerSecond: (total - failed) / elapsed, pddP50: quantile(pdd, 0.5), pddP99: quantile(pdd, 0.99) };
    };
    await step(20, 2); // warm-up: the JIT, the stores' first pages
    const steps: SipStep[] = [];
    for (const rate of rates) {
      const s = await step(rate, seconds);
      steps.push(s);
      if (s.failed > 0) break;
    }
    sub.close();
    await watching;
    await client.terminate();
    // The step without a failed call that completed the most calls a second.
    const best = steps.filter((s) => s.failed === 0).sort((a, b) => b.callsPerSecond - a.callsPerSecond)[0] ?? null;
    return { steps, best };
  } finally {
    await platform.stop();
    trunk.kill('SIGTERM');
    rmSync(dataDir, { recursive: true, force: true });
  }
}
