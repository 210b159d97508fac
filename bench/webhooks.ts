/**
 * Webhook delivery throughput: N finished calls appended at once, each webhook POSTed (signed) to a
 * local receiver. perSecond = deliveries / (last arrival - first append); p50/p99 = ms from the
 * CallEnded append to the receiver seeing the POST. Runs on the embedded stores in a temp DATA_DIR.
 * The receiver (webhook-receiver.ts) is a bare parser in a worker thread, so what is measured is
 * the platform: its own thread's load is reported as `busy` (event-loop utilisation over the run).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { Redis } from 'ioredis';
import { loadConfig } from '../src/config.js';
import { createPlatform } from '../src/platform.js';
import { newCallId } from '../src/commands/call/place.js';
import { applyProvisioning } from '../src/commands/provisioning/provision.js';
import type { CallEndedData } from '../src/domain/call-events.js';
import { aggregateCache } from '../src/commands/aggregate-cache.js';
import type { EventStore } from '../src/gateways/event-store/port.js';
import type { JobQueue } from '../src/gateways/queue/port.js';

export interface BenchResult {
  name: string;
  /** Deliveries the platform made before this round (its warm-up). */
  after: number;
  /** Event-store appends and commits per delivery, from the CallEnded on. */
  appendsPerDelivery: number;
  commitsPerDelivery: number;
  /** WAL syncs (fsyncs) of the event store per delivery: commits made together share one. */
  syncsPerDelivery: number;
  /** The rest of the work per delivery (see WorkCounts). */
  work: WorkCounts;
  perSecond: number;
  p50: number;
  p99: number;
}

/** Work per call or delivery besides the event store's appends and commits. */
export interface WorkCounts {
  /** jobs.db: synced commits, rows they wrote (enqueues, outcomes), claim transactions, fsyncs. */
  queueCommits: number;
  queueWrites: number;
  queueClaims: number;
  queueSyncs: number;
  /** Events decoded: by the subscriptions (once each, shared) and by aggregate loads (stream reads). */
  subscriptionDecodes: number;
  streamDecodes: number;
  /** HTTP requests the receiver got (webhooks bench only; more than one per delivery means retries). */
  httpRequests: number;
  /** The platform thread's event-loop utilisation over the run (1 = never idle). */
  busy: number;
  /** CPU time of the platform's thread per unit, in microseconds (what a loaded machine does not inflate). */
  cpuUs: number;
  /** CPU time of the whole process per unit (its other threads too: POSTs, the receiver, V8's compiler and GC). */
  processCpuUs: number;
}

/** Commit and append counts of the embedded event store (zeros for another adapter). */
export const storeStats = (events: object): { commits: number; appends: number; syncs: number; decoded: number } => ({ commits: 0, appends: 0, syncs: 0, decoded: 0, ...(events as { stats?: { commits: number; appends: number; syncs: number; decoded?: number } }).stats });

/** CPU time (ms) of the calling thread so far, from /proc (10 ms ticks); 0 where there is none. */
export function threadCpuMs(): number {
  try {
    const stat = readFileSync('/proc/thread-self/stat', 'latin1');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * 10; // utime + stime, in ticks of 1/100 s
  } catch {
    return 0;
  }
}

/** Everything countable at once, so that two readings give the work done between them. */
export function workSnapshot(events: EventStore, queue: JobQueue) {
  const q = { commits: 0, writes: 0, claims: 0, syncs: 0, ...(queue as { stats?: object }).stats };
  const store = storeStats(events);
  return { store, queue: q, decoded: store.decoded, folded: aggregateCache(events).eventsFolded, elu: performance.eventLoopUtilization(), cpuMs: threadCpuMs(), cpu: process.cpuUsage() };
}

/** The work between two snapshots, per unit (call or delivery). */
export function workPer(before: ReturnType<typeof workSnapshot>, after: ReturnType<typeof workSnapshot>, units: number, httpRequests = 0): WorkCounts {
  const per = (a: number, b: number) => (a - b) / units;
  return {
    queueCommits: per(after.queue.commits, before.queue.commits),
    queueWrites: per(after.queue.writes, before.queue.writes),
    queueClaims: per(after.queue.claims, before.queue.claims),
    queueSyncs: per(after.queue.syncs, before.queue.syncs),
    subscriptionDecodes: per(after.decoded, before.decoded),
    streamDecodes: per(after.folded, before.folded),
    httpRequests: httpRequests / units,
    busy: performance.eventLoopUtilization(after.elu, before.elu).utilization,
    cpuUs: (1000 * (after.cpuMs - before.cpuMs)) / units,
    processCpuUs: (after.cpu.user + after.cpu.system - before.cpu.user - before.cpu.system) / units,
  };
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

/** The receiver in its worker thread: its port, and the arrivals once as many deliveries as expected came. */
async function startReceiverWorker(): Promise<{
  url: string;
  /** Resolves with every arrival so far once `n` ids in all arrived. */
  arrivals: (n: number) => Promise<{ arrivals: [string, number][]; requests: number }>;
  requestsSoFar: () => Promise<number>;
  stop: () => Promise<void>;
}> {
  const worker = new Worker(new URL('./webhook-receiver.js', import.meta.url), { workerData: { receiver: { expected: Number.MAX_SAFE_INTEGER } } });
  let arrived: ((a: { arrivals: [string, number][]; requests: number }) => void) | null = null;
  const counts: ((n: number) => void)[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    worker.on('message', (m: { port?: number; arrivals?: [string, number][]; requests?: number; requestsSoFar?: number }) => {
      if (m.port !== undefined) resolve(m.port);
      if (m.arrivals) arrived?.({ arrivals: m.arrivals, requests: m.requests ?? 0 });
      if (m.requestsSoFar !== undefined) counts.shift()?.(m.requestsSoFar);
    });
    worker.once('error', reject);
  });
  const arrivals = (n: number) =>
    new Promise<{ arrivals: [string, number][]; requests: number }>((resolve) => {
      arrived = resolve;
      worker.postMessage({ expect: n });
    });
  const requestsSoFar = () =>
    new Promise<number>((resolve) => {
      counts.push(resolve);
      worker.postMessage('requests');
    });
  return { url: `http://127.0.0.1:${port}/hook`, arrivals, requestsSoFar, stop: async () => void (await worker.terminate()) };
}

/** Called when the measured part starts and when it ends (a profiler, say). */
export interface WindowHooks {
  start?: () => Promise<void> | void;
  end?: () => Promise<void> | void;
}

/**
 * Rounds of `calls` deliveries measured on one platform, each after as many deliveries in all as
 * `after` says (default [0]: one round on a cold process): the ones before it are a warm-up, not
 * measured, so a round measures a process whose delivery path V8 has compiled that far, as in a
 * server that has been up a while (the HTTP and calls suites warm up too).
 */
export async function benchWebhooks(options: { calls?: number; after?: number[]; window?: WindowHooks; redisUrl?: string; databaseUrl?: string } = {}): Promise<BenchResult[]> {
  const calls = options.calls ?? 2000;
  const after = options.after ?? [0];
  const appendedAt = new Map<string, number>();
  const receiver = await startReceiverWorker();
  const receiverUrl = receiver.url;
  const now = () => performance.timeOrigin + performance.now();

  const dataDir = mkdtempSync(path.join(tmpdir(), 'ct-bench-webhooks-'));
  // On BullMQ, keys of this run's own (removed after it).
  const redisPrefix = options.redisUrl ? `ct-bench-${path.basename(dataDir)}` : undefined;
  let stopPlatform: (() => Promise<void>) | null = null;
  try {
    const config = loadConfig({ EMBEDDED_THREADS: process.env.EMBEDDED_THREADS, PORT: '0', SOCKET_PORT: '0', DATA_DIR: dataDir, OPERATOR_TOKEN: 'bench', LOG_LEVEL: 'silent', WEBHOOK_ALLOW_PRIVATE: 'true', ROLES: 'worker,projector', REDIS_URL: options.redisUrl, REDIS_PREFIX: redisPrefix, DATABASE_URL: options.databaseUrl });
    const platform = await createPlatform(config, { logger: pino({ level: 'silent' }) });
    stopPlatform = () => platform.stop();
    await platform.start();
    const doc = {
      services: [{ id: 101, name: 'Bench', customer: 'bench', timezone: 'UTC', dids: ['8000000101'], skills: [], queues: [], webhook: { url: receiverUrl, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }, socketKey: 'k', blocked: [], customers: [], agents: [] }],
      users: [],
    };
    const applied = await applyProvisioning(platform.ctx.events, doc);
    await platform.ctx.sync.waitFor(applied.position);
    // A round is over when each of its deliveries is recorded as delivered (its attempt comes after its arrival).
    let succeeded = 0;
    let roundEnd = 0;
    let roundRecorded!: () => void;
    const sub = platform.ctx.events.subscribeToAll({ after: await platform.ctx.events.headPosition() });
    const watching = (async () => {
      for await (const e of sub) if (e.type === 'DeliveryAttempted' && (e.data as { error: unknown }).error === null && ++succeeded === roundEnd) roundRecorded();
    })();
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`webhooks bench: not every delivery arrived in 120 s`)), 120_000).unref());
    /** Appends `n` CallEnded at once, as a busy minute's finished calls would be (the appends share commits); resolves once each is delivered. */
    const round = async (n: number) => {
      roundEnd = succeeded + n;
      const recorded = new Promise<void>((r) => (roundRecorded = r));
      const appends: Promise<unknown>[] = [];
      for (let i = 0; i < n; i++) {
        const xnid = newCallId();
        const data: CallEndedData = {
          xnid, svcId: 101, direction: 'Outbound', disposition: 'answered', startTime: 0, endTime: 1000, durationS: 1, agentId: null, agentNumber: '', customerNumber: '9876543210', recordingUrl: null, source: null,
          webhook: { callid: xnid, 'call-duration': '1', 'agent-number': '', 'customer-number': '9876543210', 'end-time': '2024-05-01 10:00:01', 'start-time': '2024-05-01 10:00:00', 'call-type': 'outgoing', 'virtual-number': '8000000101', disposition: 'answered' },
        };
        appendedAt.set(xnid, now());
        appends.push(platform.ctx.events.appendToStream(`call-${xnid}`, [{ type: 'CallEnded', data }]));
      }
      await Promise.all(appends);
      return recorded;
    };
    const results: BenchResult[] = [];
    for (const point of after) {
      if (point > appendedAt.size) await Promise.race([round(point - appendedAt.size), timeout]);
      const requestsBefore = appendedAt.size > 0 ? await receiver.requestsSoFar() : 0;
      const warmed = new Set(appendedAt.keys());
      await options.window?.start?.();
      const start = now();
      const before = workSnapshot(platform.ctx.events, platform.ctx.queue);
      const arrived = receiver.arrivals(appendedAt.size + calls);
      const recorded = round(calls);
      const all = await Promise.race([arrived, timeout]);
      await Promise.race([recorded, timeout]);
      const arrivals = all.arrivals.filter(([id]) => !warmed.has(id));
      const ended = workSnapshot(platform.ctx.events, platform.ctx.queue);
      await options.window?.end?.();
      const latencies = arrivals.map(([id, at]) => at - appendedAt.get(id)!).sort((a, b) => a - b);
      const lastArrival = Math.max(...arrivals.map(([, at]) => at));
      results.push({
        appendsPerDelivery: (ended.store.appends - before.store.appends) / calls,
        commitsPerDelivery: (ended.store.commits - before.store.commits) / calls,
        syncsPerDelivery: (ended.store.syncs - before.store.syncs) / calls,
        work: workPer(before, ended, calls, all.requests - requestsBefore),
        name: 'webhook deliveries',
        after: point,
        perSecond: Math.round((calls / (lastArrival - start)) * 1000),
        p50: Math.round(quantile(latencies, 0.5) * 10) / 10,
        p99: Math.round(quantile(latencies, 0.99) * 10) / 10,
      });
    }
    sub.close();
    await watching;
    return results;
  } finally {
    // The receiver's thread too when the platform never started: a thread left running keeps the bench from exiting.
    await stopPlatform?.();
    await receiver.stop();
    rmSync(dataDir, { recursive: true, force: true });
    if (options.redisUrl && redisPrefix) await removeKeys(options.redisUrl, `${redisPrefix}:*`);
  }
}

async function removeKeys(url: string, pattern: string): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    for (let cursor = '0'; ; ) {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      if ((cursor = next) === '0') break;
    }
  } finally {
    redis.disconnect();
  }
}
