/**
 * Dialer upload benchmark (issue 29 item 2): a 100,000-row .xlsx POSTed to /api/v1/dialer of a
 * running platform, while another tenant pings (`GET /api/v1/ping`, one at a time, from a worker
 * thread so its clock is not the platform's). Measured: the upload's answer time (read, contacts
 * appended, the campaign's counts caught up), then until every read model has applied it (the
 * contacts' records, projected after the answer), the process's peak RSS above what it was before the upload,
 * and the other tenant's ping latency before (idle) and during one upload, then during `concurrent`
 * uploads by as many tenants at once.
 *
 *   npx tsc -p tsconfig.build.json && node dist/bench/dialer-upload.js
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { xlsxOf } from './campaign-sheet.js';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { createPlatform } from '../src/platform.js';
import { applyProvisioning } from '../src/commands/provisioning/provision.js';

const TASK = 'dialer-upload-pinger';
const basic = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;

export interface PingStats {
  count: number;
  p50: number;
  p99: number;
  max: number;
  /** The platform thread's longest block meanwhile, ms. */
  loopMaxMs?: number;
}

export interface DialerUploadResult {
  rows: number;
  /** One upload: its answer time, s. */
  seconds: number;
  /** One upload: until every read model (its contacts' records too) has applied it, s. */
  allSeconds: number;
  /** Peak RSS of the process during the one upload, above the RSS before it, MiB. */
  peakRssGrowthMiB: number;
  idle: PingStats;
  during: PingStats;
  concurrent: { uploads: number; seconds: number; allSeconds: number; peakRssGrowthMiB: number; during: PingStats };
}

/** Tenants: one pinging, the others uploading; each its own customer, service and admin. */
function document(tenants: number) {
  const services = Array.from({ length: tenants }, (_, i) => ({
    id: 501 + i, name: `Tenant ${i}`, customer: `tenant-${i}`, timezone: 'UTC', dids: [`80000005${String(i).padStart(2, '0')}`],
    skills: [], queues: [], webhook: null, socketKey: null, blocked: [], customers: [], agents: [],
  }));
  const users = services.map((s, i) => ({ id: 9501 + i, username: `tenant-${i}`, password: `password-${i}`, admin: true, services: [s.id] }));
  return { services, users };
}

function stats(ms: number[]): PingStats {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0;
  const r = (n: number) => Math.round(n * 10) / 10;
  return { count: s.length, p50: r(at(0.5)), p99: r(at(0.99)), max: r(s[s.length - 1] ?? 0) };
}

/** Pings from a worker thread until told to stop; answers the latencies and the peak RSS it sampled. */
function pinger(url: string, auth: string) {
  const worker = new Worker(new URL(import.meta.url), { workerData: { task: TASK, url, auth } });
  let ready!: () => void;
  const warm = new Promise<void>((r) => (ready = r));
  const result = new Promise<{ ms: number[]; peakRss: number }>((resolve, reject) => {
    worker.on('message', (m: 'ready' | { ms: number[]; peakRss: number }) => (m === 'ready' ? ready() : resolve(m)));
    worker.once('error', reject);
  });
  return {
    /** After the thread's first pings (its own start-up is not measured). */
    warm,
    async stop() {
      worker.postMessage('stop');
      const r = await result;
      await worker.terminate();
      return r;
    },
  };
}

async function upload(url: string, tenant: number, bytes: Buffer): Promise<number> {
  const form = new FormData();
  form.set('svc-id', String(501 + tenant));
  form.set('campaign-id', '1');
  form.set('end-time', String(Math.floor(Date.now() / 1000) + 86_400));
  form.set('file', new Blob([new Uint8Array(bytes)]), 'campaign.xlsx');
  const t0 = performance.now();
  const res = await fetch(`${url}/api/v1/dialer`, { method: 'POST', headers: { authorization: basic(`tenant-${tenant}`, `password-${tenant}`) }, body: form });
  const body = await res.text();
  if (res.status !== 200) throw new Error(`upload answered ${res.status}: ${body}`);
  return (performance.now() - t0) / 1000;
}

export async function benchDialerUpload(options: { rows?: number; concurrent?: number } = {}): Promise<DialerUploadResult> {
  const rows = options.rows ?? 100_000;
  const concurrent = options.concurrent ?? Number(process.env.BENCH_DIALER_CONCURRENT ?? 4);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'ct-bench-dialer-'));
  const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', SOCKET_PORT: '0', DATA_DIR: dataDir, OPERATOR_TOKEN: 'bench-token', RATE_LIMIT_RPS: '0', LOG_LEVEL: 'silent', EMBEDDED_THREADS: process.env.EMBEDDED_THREADS });
  const platform = await createPlatform(config, { logger: pino({ level: 'silent' }) });
  try {
    const { httpUrl } = await platform.start();
    const url = httpUrl!;
    await platform.ctx.sync.waitFor((await applyProvisioning(platform.ctx.events, document(concurrent + 1))).position);
    const bytes = await xlsxOf(rows);
    const pingAuth = basic(`tenant-${concurrent}`, `password-${concurrent}`);
    const measure = async <T>(work: () => Promise<T>) => {
      global.gc?.();
      const before = process.memoryUsage().rss;
      const p = pinger(url, pingAuth);
      await p.warm;
      // The platform thread's longest block (a ping may also wait for the read models: read-your-writes).
      const loop = monitorEventLoopDelay({ resolution: 10 });
      loop.enable();
      const value = await work();
      loop.disable();
      const { ms, peakRss } = await p.stop();
      return { value, during: { ...stats(ms), loopMaxMs: Math.round(loop.max / 1e6) }, peakRssGrowthMiB: Math.round(Math.max(0, peakRss - before) / 2 ** 20) };
    };
    const idle = await measure(() => new Promise((r) => setTimeout(r, 1000)));
    // The answer, then every read model: the contacts' records are projected after the answer.
    const all = async (answer: () => Promise<number>) => {
      const t0 = performance.now();
      const seconds = await answer();
      await platform.ctx.sync.allCaughtUp(300_000);
      return { seconds, allSeconds: (performance.now() - t0) / 1000 };
    };
    const one = await measure(() => all(() => upload(url, 0, bytes)));
    const many = await measure(() =>
      all(async () => {
        const t0 = performance.now();
        await Promise.all(Array.from({ length: concurrent }, (_, i) => upload(url, i, bytes)));
        return (performance.now() - t0) / 1000;
      }),
    );
    return {
      rows,
      seconds: Math.round(one.value.seconds * 100) / 100,
      allSeconds: Math.round(one.value.allSeconds * 100) / 100,
      peakRssGrowthMiB: one.peakRssGrowthMiB,
      idle: idle.during,
      during: one.during,
      concurrent: { uploads: concurrent, seconds: Math.round(many.value.seconds * 100) / 100, allSeconds: Math.round(many.value.allSeconds * 100) / 100, peakRssGrowthMiB: many.peakRssGrowthMiB, during: many.during },
    };
  } finally {
    await platform.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

// The pinger thread: one GET /api/v1/ping at a time, a short pause between, RSS sampled alongside.
if (!isMainThread && (workerData as { task?: string } | null)?.task === TASK) {
  const { url, auth } = workerData as { url: string; auth: string };
  let stop = false;
  let peakRss = process.memoryUsage().rss;
  parentPort!.once('message', () => (stop = true));
  for (let i = 0; i < 20; i++) await (await fetch(`${url}/api/v1/ping`, { headers: { authorization: auth } })).text();
  parentPort!.postMessage('ready');
  const ms: number[] = [];
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 10);
  let failed = 0;
  while (!stop) {
    const t0 = performance.now();
    try {
      const res = await fetch(`${url}/api/v1/ping`, { headers: { authorization: auth } });
      await res.text();
      if (res.status === 200) ms.push(performance.now() - t0);
      else failed++;
    } catch {
      failed++;
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  if (failed) console.error(`pinger: ${failed} pings failed`);
  clearInterval(sampler);
  parentPort!.postMessage({ ms, peakRss: Math.max(peakRss, process.memoryUsage().rss) });
}

if (isMainThread && process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  benchDialerUpload().then(
    (r) => console.log(JSON.stringify(r, null, 2)),
    (err: unknown) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
}
