/**
 * Bench scenario: event socket fan-out. Starts the platform (roles socket + projector, embedded
 * stores in a temporary DATA_DIR), connects `clients` TCP clients to one service from a worker
 * thread (so receiving does not share the server's thread), then
 *
 * 1. burst: appends `burstEvents` leg events in appends of `batch` as fast as the store takes them,
 *    and measures lines delivered per second until every client has every event;
 * 2. paced: appends `pacedRate` events a second for `pacedSeconds`, one event per append, and
 *    measures the latency from just before each append to its receipt by each client.
 *
 * Latencies are from `performance.timeOrigin + performance.now()` on both threads.
 */
import { Worker } from 'node:worker_threads';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { createPlatform } from '../src/platform.js';
import { applyProvisioning } from '../src/commands/provisioning/provision.js';
import type { LegEventData } from '../src/domain/call-events.js';

export interface SocketFanoutOptions {
  clients?: number;
  burstEvents?: number;
  batch?: number;
  pacedRate?: number;
  pacedSeconds?: number;
  /** Longest wait for all clients to receive a phase's events. */
  timeoutMs?: number;
}

export interface SocketFanoutResult {
  clients: number;
  burst: { events: number; deliveries: number; seconds: number; eventsPerSecond: number; deliveriesPerSecond: number };
  /** Latencies from just before the append to receipt; `appendP50Ms` is the durable append alone. */
  paced: { events: number; deliveries: number; rate: number; p50Ms: number; p99Ms: number; maxMs: number; appendP50Ms: number; appendP99Ms: number };
  slowDisconnects: number;
}

const now = () => performance.timeOrigin + performance.now();

/** Runs in the worker: connects, authenticates, counts lines and records latencies (0.01 ms buckets). */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const net = require('node:net');
const { port, host, clients, svcId, key } = workerData;
const BUCKETS = 1_000_000; // 0.01 ms up to 10 s
let hist = new Uint32Array(BUCKETS + 1);
let received = 0, target = Infinity, phase = 'idle', closed = 0;
const t = () => performance.timeOrigin + performance.now();
const RE = /"data":"(\\d+):([\\d.]+)"/;
function onLine(line) {
  if (line.charCodeAt(0) !== 123) return;
  const m = RE.exec(line);
  if (!m) return;
  received++;
  if (phase === 'paced') {
    const ms = t() - Number(m[2]);
    hist[Math.min(BUCKETS, Math.max(0, Math.round(ms * 100)))]++;
  }
  if (received >= target) { target = Infinity; parentPort.postMessage({ type: 'done', at: t(), received }); }
}
let ready = 0;
for (let i = 0; i < clients; i++) {
  const s = net.connect({ port, host });
  s.setEncoding('utf8');
  let buf = '', authed = false;
  s.on('connect', () => s.write(svcId + ':' + key + '\\n'));
  s.on('data', (chunk) => {
    buf += chunk;
    let nl;
    while ((nl = buf.indexOf('\\n')) !== -1) {
      const line = buf.slice(0, nl); buf = buf.slice(nl + 1);
      if (!authed) { authed = line === 'Success'; if (authed && ++ready === clients) parentPort.postMessage({ type: 'ready' }); continue; }
      onLine(line);
    }
  });
  s.on('error', () => {});
  s.on('close', () => { closed++; });
}
parentPort.on('message', (m) => {
  if (m.type === 'expect') { phase = m.phase; received = 0; target = m.lines; hist = new Uint32Array(BUCKETS + 1); }
  if (m.type === 'report') {
    const total = hist.reduce((a, b) => a + b, 0);
    const pct = (p) => { let acc = 0; const want = Math.ceil(total * p); for (let i = 0; i <= BUCKETS; i++) { acc += hist[i]; if (acc >= want) return i / 100; } return NaN; };
    let max = 0; for (let i = BUCKETS; i >= 0; i--) if (hist[i]) { max = i / 100; break; }
    parentPort.postMessage({ type: 'report', p50: pct(0.5), p99: pct(0.99), max, total, closed });
  }
  if (m.type === 'exit') process.exit(0);
});
`;

function nextMessage(worker: Worker, type: string, timeoutMs: number): Promise<any> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      worker.off('message', on);
      reject(new Error(`bench: no "${type}" from the client worker within ${timeoutMs} ms`));
    }, timeoutMs);
    const on = (m: { type: string }) => {
      if (m.type !== type) return;
      clearTimeout(timer);
      worker.off('message', on);
      resolve(m);
    };
    worker.on('message', on);
  });
}

export async function benchSocketFanout(opts: SocketFanoutOptions = {}): Promise<SocketFanoutResult> {
  const clients = opts.clients ?? 1000;
  const burstEvents = opts.burstEvents ?? 2000;
  const batch = opts.batch ?? 50;
  const pacedRate = opts.pacedRate ?? 200;
  const pacedSeconds = opts.pacedSeconds ?? 3;
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const svcId = 1;
  const key = 'bench-socket-key';

  const dataDir = mkdtempSync(path.join(tmpdir(), 'ct-bench-socket-'));
  const config = loadConfig({ EMBEDDED_THREADS: process.env.EMBEDDED_THREADS, PORT: '0', SOCKET_PORT: '0', DATA_DIR: dataDir, ROLES: 'socket,projector', OPERATOR_TOKEN: 'bench', LOG_LEVEL: 'silent' });
  const platform = await createPlatform(config, { logger: pino({ level: 'silent' }) });
  let worker: Worker | null = null;
  try {
    const { socketPort } = await platform.start();
    const prov = await applyProvisioning(platform.ctx.events, {
      services: [{ id: svcId, name: 'Bench', customer: 'bench', dids: ['8000000001'], socketKey: key }],
      users: [],
    });
    await platform.ctx.sync.waitFor(prov.position);

    worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { port: socketPort, host: config.host, clients, svcId, key } });
    await nextMessage(worker, 'ready', timeoutMs);

    const events = platform.ctx.events;
    let seq = 0;
    const leg = (): LegEventData => ({ xnid: randomUUID(), svcId, agentId: null, number: '9876543210', time: Date.now(), data: `${seq++}:${now().toFixed(3)}`, direction: 'Inbound' });

    // 1. burst
    worker.postMessage({ type: 'expect', phase: 'burst', lines: burstEvents * clients });
    const burstDone = nextMessage(worker, 'done', timeoutMs);
    const t0 = now();
    for (let i = 0; i < burstEvents; i += batch) {
      const n = Math.min(batch, burstEvents - i);
      const d = leg();
      await events.appendToStream(`call-${d.xnid}`, Array.from({ length: n }, () => ({ type: 'CustomerRing', data: { ...d, data: `${seq++}:${now().toFixed(3)}` } })));
      // Yield so the fan-out and the sockets run between appends, as they would with separate writers.
      await new Promise((r) => setImmediate(r));
    }
    const { at: burstEnd } = await burstDone;
    const burstSeconds = (burstEnd - t0) / 1000;

    // 2. paced
    const pacedEvents = Math.round(pacedRate * pacedSeconds);
    worker.postMessage({ type: 'expect', phase: 'paced', lines: pacedEvents * clients });
    const pacedDone = nextMessage(worker, 'done', timeoutMs);
    const start = now();
    const appendMs: number[] = [];
    for (let i = 0; i < pacedEvents; i++) {
      const due = start + (i * 1000) / pacedRate;
      const wait = due - now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      const d = leg();
      const a0 = now();
      await events.appendToStream(`call-${d.xnid}`, [{ type: 'CustomerRing', data: d }]);
      appendMs.push(now() - a0);
    }
    appendMs.sort((a, b) => a - b);
    const appendPct = (p: number) => round(appendMs[Math.min(appendMs.length - 1, Math.ceil(appendMs.length * p) - 1)] ?? NaN);
    await pacedDone;
    worker.postMessage({ type: 'report' });
    const report = await nextMessage(worker, 'report', timeoutMs);

    return {
      clients,
      burst: {
        events: burstEvents,
        deliveries: burstEvents * clients,
        seconds: round(burstSeconds),
        eventsPerSecond: Math.round(burstEvents / burstSeconds),
        deliveriesPerSecond: Math.round((burstEvents * clients) / burstSeconds),
      },
      paced: { events: pacedEvents, deliveries: report.total, rate: pacedRate, p50Ms: report.p50, p99Ms: report.p99, maxMs: report.max, appendP50Ms: appendPct(0.5), appendP99Ms: appendPct(0.99) },
      slowDisconnects: platform.socket!.stats().slowDisconnects,
    };
  } finally {
    if (worker) {
      worker.postMessage({ type: 'exit' });
      await worker.terminate().catch(() => {});
    }
    await platform.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const round = (n: number) => Math.round(n * 1000) / 1000;
