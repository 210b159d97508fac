/**
 * `npm run bench`: the platform's HTTP overhead against a bare fastify baseline, in one run.
 *
 * Starts the platform (createPlatform, as `npm start` does) on a temporary DATA_DIR with the
 * contract's example document provisioned, rate limit off and logging silent, plus a bare fastify
 * app answering `/ping`. Each scenario is loaded for BENCH_DURATION_S seconds over
 * BENCH_CONNECTIONS keep-alive connections from a worker thread, after a short warm-up, and the
 * table shows requests/s, latency percentiles and throughput relative to the baseline.
 *
 * To load another endpoint, add it to `scenarios`; to measure something of another shape (socket
 * fan-out, webhook deliveries), add a function to `suites` that returns its printed report.
 *
 * Settings: BENCH_DURATION_S (5), BENCH_WARMUP_S (1), BENCH_CONNECTIONS (50),
 * BENCH_ONLY (comma-separated scenario names; the baseline always runs), BENCH_SUITES
 * (comma-separated suite names, default all), BENCH_JSON=1 (also print the HTTP results as JSON),
 * BENCH_CALLS (2000) and BENCH_CALLS_WARMUP (400) for the calls suite, BENCH_DIALER_CONCURRENT (4) for the dialer suite, BENCH_WEBHOOKS (5000) and
 * BENCH_WEBHOOKS_WARMUP (1000,10000: a round measured after each count of deliveries) for the webhooks suite, BENCH_REDIS_URL (the webhooks suite again with
 * the job queue on BullMQ at that Redis), BENCH_REPLAY_EVENTS (1000000) and BENCH_EXPORT_CALLS (100000) for the replay suite,
 * BENCH_DATABASE_URL (a PostgreSQL server: the http, calls and webhooks suites run again with DATABASE_URL
 * on a database of their own, created and dropped by the run), BENCH_CPU_PROFILE=dir (a CPU profile of the servers per HTTP scenario, and of the calls, webhooks
 * and sip suites whole).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { Session } from 'node:inspector/promises';
import Fastify from 'fastify';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { createPlatform } from '../src/platform.js';
import type { LoadOptions, LoadResult, LoadTarget } from './load.js';
import { benchCalls } from './calls.js';
import { benchSocketFanout } from './socket.js';
import { benchWebhooks, storeStats, threadCpuMs, type WorkCounts } from './webhooks.js';
import { benchDialerIngest } from './dialer-ingest.js';
import { benchDialerUpload, type PingStats } from './dialer-upload.js';
import { benchHistory, type HistoryBenchResult } from './history.js';
import { applyProvisioning } from '../src/commands/provisioning/provision.js';
import { benchReplay } from './replay.js';
import { benchSip } from './sip.js';
import { withDatabase } from './postgres.js';
import { pgUsage, usageLine } from './postgres-usage.js';

/** The contract's example document (CONTRACT section 3). */
const EXAMPLE_DOCUMENT = path.resolve(import.meta.dirname, '../../examples/provisioning.json');

const basic = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });
const admin = basic('acme-admin', 's3cret-admin');

/** A second service with 50 agents, each on its own stream, and its admin (provisioned at start). */
const FIFTY = 50;
const FIFTY_SVC = 201;
const fiftyNumber = (i: number) => `92000${String(i).padStart(5, '0')}`;
const fiftyAdmin = basic('bench-admin', 'bench-admin-password');
const fiftyDocument = {
  services: [
    {
      id: FIFTY_SVC,
      name: 'Bench Fifty',
      customer: 'bench',
      timezone: 'UTC',
      dids: ['8000000201'],
      agents: Array.from({ length: FIFTY }, (_, i) => ({ id: 7000 + i, name: `Agent ${i}`, number: fiftyNumber(i), sip: `fifty-${i}` })),
    },
  ],
  users: [{ id: 9201, username: 'bench-admin', password: 'bench-admin-password', admin: true, services: [FIFTY_SVC] }],
};

interface Figures {
  bare?: number;
  rps: Record<string, number>;
  history?: HistoryBenchResult;
  calls?: number;
  webhooks?: { after: number; perSecond: number }[];
}
/** Figures of issue 11's table, filled in by the suites as they run, printed at the end; `pg`: the same on PostgreSQL. */
const figures: Figures & { pg?: Figures } = { rps: {} };
/** Where a suite's figures go: the embedded run's, or (with a database URL) PostgreSQL's. */
const figuresFor = (databaseUrl?: string): Figures => (databaseUrl ? (figures.pg ??= { rps: {} }) : figures);

/** The suite on the embedded stores, then (BENCH_DATABASE_URL) again on a PostgreSQL database of its own. */
async function alsoOnPostgres(run: (databaseUrl?: string) => Promise<string>): Promise<string> {
  const report = await run();
  const server = process.env.BENCH_DATABASE_URL?.trim();
  if (!server) return report;
  return `${report}
-- on PostgreSQL (DATABASE_URL, a database of its own)

${await withDatabase(server, (url) => run(url))}`;
}

/** Which server a scenario loads. */
type Server = 'bare' | 'platform';

interface Scenario {
  name: string;
  server: Server;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  alternate?: string[];
  perConnection?: string[][];
  headers?: Record<string, string>;
  body?: string;
  /** What the numbers mean, printed under the table. */
  note: string;
}

/** The first scenario is the baseline the others are compared with. */
const scenarios: Scenario[] = [
  { name: 'bare /ping', server: 'bare', method: 'GET', path: '/ping', note: 'fastify with one route, no plugins: the ceiling of this machine' },
  { name: 'GET /api/v1/ping', server: 'platform', method: 'GET', path: '/api/v1/ping', headers: admin, note: 'Basic auth (cached verification), read-your-writes check, route pipeline' },
  { name: 'GET /api/v1/user', server: 'platform', method: 'GET', path: '/api/v1/user', headers: admin, note: 'as above plus a read-model lookup and a SHA-256 of the stored hash' },
  {
    name: 'PATCH /api/v1/agents (50 agents)',
    server: 'platform',
    method: 'PATCH',
    path: '',
    perConnection: Array.from({ length: FIFTY }, (_, i) => [
      `/api/v1/agents?svc-id=${FIFTY_SVC}&break=1&agent-number=${fiftyNumber(i)}`,
      `/api/v1/agents?svc-id=${FIFTY_SVC}&break=0&agent-number=${fiftyNumber(i)}`,
    ]),
    headers: fiftyAdmin,
    note: 'break toggles, each connection on its own agent (own stream): commands that do not contend, grouped commits',
  },
  { name: 'GET /api/v1/dashboard (50 agents)', server: 'platform', method: 'GET', path: `/api/v1/dashboard?svc-id=${FIFTY_SVC}`, headers: fiftyAdmin, note: 'the dashboard of a service with 50 agents (hot read models)' },
  { name: 'GET /api/v1/agents (50 agents)', server: 'platform', method: 'GET', path: `/api/v1/agents?svc-id=${FIFTY_SVC}`, headers: fiftyAdmin, note: 'the agent records of a service with 50 agents (admin)' },
  {
    name: 'PATCH /api/v1/agents (break toggle)',
    server: 'platform',
    method: 'PATCH',
    path: '/api/v1/agents?break=1&agent-number=9100001001',
    alternate: ['/api/v1/agents?break=0&agent-number=9100001001'],
    headers: admin,
    note: 'a command: agent lookup, load + decide + durable append (one contended stream), wait for the projection',
  },
  { name: 'GET /api/v1/dashboard', server: 'platform', method: 'GET', path: '/api/v1/dashboard?svc-id=101', headers: admin, note: 'service, agents, call stats and queue read models assembled' },
];

const envInt = (name: string, dflt: number) => {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number`);
  return n;
};
/** A comma-separated list of non-negative numbers, in increasing order. */
const envList = (name: string, dflt: number[]) => {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return dflt;
  const list = raw.split(',').map((x) => Number(x.trim()));
  if (list.some((n) => !Number.isFinite(n) || n < 0) || list.some((n, i) => i > 0 && n < list[i - 1]!)) throw new Error(`${name} must be non-negative numbers in increasing order, comma-separated`);
  return list;
};

function load(target: LoadTarget, options: LoadOptions): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./load-worker.js', import.meta.url), { workerData: { target, options } });
    worker.once('message', resolve);
    worker.once('error', reject);
    worker.once('exit', (code) => code !== 0 && reject(new Error(`load worker exited with ${code}`)));
  });
}

async function startBare(): Promise<{ url: string; close: () => Promise<void> }> {
  const app = Fastify({ logger: false });
  app.get('/ping', async (_req, reply) => reply.type('text/plain').send('pong'));
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return { url, close: () => app.close() };
}

interface Started {
  url: string;
  close: () => Promise<void>;
  /** The platform's event store counts (commits, appends, syncs). */
  stats?: () => ReturnType<typeof storeStats>;
}

async function startPlatform(databaseUrl?: string): Promise<Started> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'ct-bench-'));
  const provisionFile = EXAMPLE_DOCUMENT;
  const config = loadConfig({
    EMBEDDED_THREADS: process.env.EMBEDDED_THREADS,
    HOST: '127.0.0.1',
    PORT: '0',
    SOCKET_PORT: '0',
    DATA_DIR: dataDir,
    OPERATOR_TOKEN: randomBytes(16).toString('hex'),
    PROVISION_FILE: provisionFile,
    RATE_LIMIT_RPS: '0',
    LOG_LEVEL: 'silent',
    DATABASE_URL: databaseUrl,
  });
  const platform = await createPlatform(config, { logger: pino({ level: 'silent' }) });
  const { httpUrl } = await platform.start();
  if (!httpUrl) throw new Error('the platform did not start its HTTP API');
  await platform.ctx.sync.waitFor((await applyProvisioning(platform.ctx.events, fiftyDocument)).position);
  return {
    url: httpUrl,
    stats: () => storeStats(platform.ctx.events),
    close: async () => {
      await platform.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(rows[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}

/**
 * BENCH_CPU_PROFILE=dir: a CPU profile of this process (the servers; the load runs in a worker) per
 * scenario, written as dir/<scenario>.cpuprofile for Chrome DevTools or speedscope.
 */
async function profiled<T>(name: string, run: () => Promise<T>): Promise<T> {
  const dir = process.env.BENCH_CPU_PROFILE;
  if (!dir) return run();
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    return await run();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(path.join(dir, `${name.replace(/[^a-z0-9]+/gi, '_')}.cpuprofile`), JSON.stringify(profile));
    session.disconnect();
  }
}

/** The HTTP suite: every scenario against its server, one table. */
async function httpSuite(databaseUrl?: string): Promise<string> {
  const durationMs = envInt('BENCH_DURATION_S', 5) * 1000;
  const warmupMs = envInt('BENCH_WARMUP_S', 1) * 1000;
  const connections = envInt('BENCH_CONNECTIONS', 50);
  const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim()).filter(Boolean);
  const chosen = scenarios.filter((s, i) => i === 0 || !only || only.includes(s.name));

  const servers: Partial<Record<Server, Started>> = {};
  const results: Array<{ scenario: Scenario; result: LoadResult; work: string }> = [];
  const usage = databaseUrl ? await pgUsage(databaseUrl) : null;
  try {
    servers.bare = await startBare();
    servers.platform = await startPlatform(databaseUrl);
    process.stdout.write(`${connections} connections, ${durationMs / 1000} s per scenario (+${warmupMs / 1000} s warm-up)\n`);
    for (const scenario of chosen) {
      const target: LoadTarget = {
        url: servers[scenario.server]!.url,
        method: scenario.method,
        path: scenario.path,
        alternate: scenario.alternate,
        perConnection: scenario.perConnection,
        headers: scenario.headers,
        body: scenario.body,
      };
      if (warmupMs > 0) await load(target, { connections, durationMs: warmupMs });
      const server = servers[scenario.server]!;
      const pgBefore = scenario.server === 'platform' ? await usage?.sample() : undefined;
      const before = { cpuMs: threadCpuMs(), cpu: process.cpuUsage(), store: server.stats?.() };
      const result = await profiled(scenario.name, () => load(target, { connections, durationMs }));
      // The server thread's CPU per request: what a loaded machine inflates far less than the rate;
      // and the whole process's (the load generator's thread and the stores' threads included).
      const requests = Math.max(1, result.requests);
      const threadUs = (1000 * (threadCpuMs() - before.cpuMs)) / requests;
      const processCpu = process.cpuUsage(before.cpu);
      const processUs = (processCpu.user + processCpu.system) / requests;
      const after = server.stats?.();
      const grouped =
        before.store && after && after.appends > before.store.appends
          ? `; ${f1((after.appends - before.store.appends) / (after.commits - before.store.commits))} appends a commit`
          : '';
      const pgAfter = pgBefore && (await usage?.sample());
      const onPg = pgBefore && pgAfter ? `\n    ${usageLine(pgBefore, pgAfter, requests)}` : '';
      results.push({ scenario, result, work: `${fmt(threadUs)} µs CPU of the server thread a request (${fmt(processUs)} µs of the process)${grouped}${onPg}` });
      process.stdout.write(`  ${scenario.name}: ${fmt(result.rps)} req/s\n`);
    }
  } finally {
    for (const s of Object.values(servers)) await s?.close();
    await usage?.close();
  }

  const baseline = results[0]!.result;
  const into = figuresFor(databaseUrl);
  into.bare = baseline.rps;
  for (const { scenario, result } of results) if (result.errors === 0 && (result.statuses['2xx'] ?? 0) === result.requests) into.rps[scenario.name] = result.rps;
  const rows = [['scenario', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'non-2xx', 'errors', 'vs baseline']];
  for (const { scenario, result } of results) {
    const non2xx = result.requests - (result.statuses['2xx'] ?? 0);
    rows.push([
      scenario.name,
      fmt(result.rps),
      fmt(result.latencyMs.p50, 2),
      fmt(result.latencyMs.p99, 2),
      fmt(result.latencyMs.max, 1),
      fmt(non2xx),
      fmt(result.errors),
      `${fmt((result.rps / baseline.rps) * 100, 1)} %`,
    ]);
  }
  let report = `${table(rows)}\n\n${results.map(({ scenario, work }) => `  ${scenario.name}: ${scenario.note}\n    ${work}`).join('\n')}\n`;
  if (process.env.BENCH_JSON === '1') report += `${JSON.stringify(results.map(({ scenario, result }) => ({ name: scenario.name, ...result })), null, 2)}\n`;
  const failed = results.filter(({ result }) => result.errors > 0 || (result.statuses['2xx'] ?? 0) < result.requests);
  if (failed.length > 0) {
    throw new Error(`some requests failed: ${failed.map((f) => `${f.scenario.name} ${JSON.stringify(f.result.statuses)} errors=${f.result.errors}`).join('; ')}\n${report}`);
  }
  return report;
}

interface Suite {
  name: string;
  /** Runs the measurement and returns its report; throws when the measurement itself failed. */
  run(): Promise<string>;
}

const f1 = (n: number) => fmt(n, 1);
const f2 = (n: number) => fmt(n, 2);

/** The platform thread's load and the CPU per unit. */
const cpuLine = (w: WorkCounts) => `platform thread busy ${Math.round(w.busy * 100)}%, ${fmt(w.cpuUs)} µs CPU each (${fmt(w.processCpuUs)} µs of the process)`;

/** The calls and webhooks suites' work per unit besides the event store's appends. */
const workLine = (w: WorkCounts) =>
  `jobs.db ${f2(w.queueWrites)} rows in ${f2(w.queueCommits)} commits, ${f2(w.queueSyncs)} fsyncs, ${f2(w.queueClaims)} claims; events decoded ${f1(w.subscriptionDecodes)} by subscriptions, ${f1(w.streamDecodes)} by stream reads` +
  `${w.httpRequests ? `; ${f2(w.httpRequests)} HTTP requests` : ''}; ${cpuLine(w)}`;

const suites: Suite[] = [
  { name: 'http', run: () => alsoOnPostgres(httpSuite) },
  {
    // Complete calls over SIP with SIPp as the carrier (issue 31); BENCH_SIP_RATES, BENCH_SIP_SECONDS.
    name: 'sip',
    run: async () => {
      // 200 twice: the target is a sustained rate, and the first step at a new rate also carries the
      // climb to it (connections opened, the young generation grown); both steps are reported.
      const rates = envList('BENCH_SIP_RATES', [50, 100, 200, 200, 300, 400]);
      const { steps, best } = await benchSip({ rates, seconds: envInt('BENCH_SIP_SECONDS', 3) });
      const rows = steps.map((r) => [`${fmt(r.rate)} calls/s offered`, fmt(r.calls), fmt(r.failed), f1(r.callsPerSecond), f1(r.pddP50), f1(r.pddP99)]);
      const last = steps.at(-1)!;
      const line = best ? `sip: ${f1(best.callsPerSecond)} calls/s, post-dial delay p50 ${f1(best.pddP50)} ms p99 ${f1(best.pddP99)} ms, ${best.failed} failed` : `sip: no rate without a failed call`;
      const beyond = last.failed > 0 ? `; at ${fmt(last.rate)} calls/s offered ${fmt(last.failed)} of ${fmt(last.calls)} failed` : '; no offered rate failed';
      // The issue's target is at 200 calls/s: that step's own figures, whatever step was best.
      const at200 = steps.filter((s) => s.rate === 200);
      const targetLine = at200.map((s, i) => `sip at 200 calls/s offered${at200.length > 1 ? (i === 0 ? ' (first step)' : ' (held)') : ''}: ${f1(s.callsPerSecond)} calls/s, post-dial delay p50 ${f1(s.pddP50)} ms p99 ${f1(s.pddP99)} ms, ${s.failed} failed (target: no failed call, p99 <= 50 ms)`).join('\n  ');
      return `${table([['complete calls over SIP (SIPp as the carrier)', 'calls', 'failed', 'calls/s', 'PDD p50 ms', 'PDD p99 ms'], ...rows])}\n  POST /calls -> INVITE at the trunk -> answered -> bridged (re-INVITEs) -> hangup -> webhook record; rate raised until a call fails${beyond}; calls/s: calls completed over the time from the first POST to the last call's end; PDD: each step's calls, POST sent to the customer's INVITE sent\n  ${line} (the best step)${targetLine ? `\n  ${targetLine}` : ''}\n`;
    },
  },
  {
    name: 'history',
    run: async () => {
      const r = await benchHistory({ events: envInt('BENCH_HISTORY_EVENTS', 20_000) });
      figures.history = r;
      return `${table([
        ['command latency (PATCH break toggle, one client)', 'p50 ms', 'p99 ms'],
        ['fresh agent stream', f1(r.fresh.p50), f1(r.fresh.p99)],
        [`agent stream holding ${fmt(r.events)} events`, f1(r.long.p50), f1(r.long.p99)],
        [`same, first command after a restart (cold, from the snapshot)`, f1(r.coldMs), ''],
      ])}\n`;
    },
  },
  {
    name: 'calls',
    run: () => alsoOnPostgres(async (databaseUrl) => {
      const r = await benchCalls({ calls: envInt('BENCH_CALLS', 2000), warmup: envInt('BENCH_CALLS_WARMUP', 400), inFlight: 20, databaseUrl });
      figuresFor(databaseUrl).calls = r.callsPerSecond;
      return `${table([
        ['complete simulated calls', 'calls', 'answered', 'seconds', 'calls/s', 'p50 ms', 'p99 ms'],
        ['POST /calls -> rung, answered, bridged, hung up, recorded', fmt(r.calls), fmt(r.answered), f1(r.seconds), f1(r.callsPerSecond), f1(r.p50Ms), f1(r.p99Ms)],
      ])}\n  20 calls at once, one free agent each, after ${fmt(envInt('BENCH_CALLS_WARMUP', 400))} warm-up calls; latency from the POST to CallEnded; the client in a worker thread; per call ${f1(r.appendsPerCall)} appends in ${f1(r.commitsPerCall)} commits and ${f1(r.syncsPerCall)} fsyncs of the event store\n  ${workLine(r.work)}\n`;
    }),
  },
  {
    name: 'socket',
    run: async () => {
      const r = await benchSocketFanout({ clients: 1000 });
      return `${table([
        ['socket fan-out (1,000 clients)', 'events', 'deliveries/s', 'events/s', 'p50 ms', 'p99 ms', 'append p50 ms'],
        ['burst', fmt(r.burst.events), fmt(r.burst.deliveriesPerSecond), fmt(r.burst.eventsPerSecond), '', '', ''],
        [`paced ${r.paced.rate}/s`, fmt(r.paced.events), '', '', f1(r.paced.p50Ms), f1(r.paced.p99Ms), f1(r.paced.appendP50Ms)],
      ])}\n  latency from the append to receipt by every client; slow-client disconnects: ${r.slowDisconnects}\n`;
    },
  },
  {
    name: 'webhooks',
    run: () => alsoOnPostgres(async (databaseUrl) => {
      const after = envList('BENCH_WEBHOOKS_WARMUP', [1000, 10_000]);
      const calls = envInt('BENCH_WEBHOOKS', 5000);
      const rs = await benchWebhooks({ calls, after, databaseUrl });
      figuresFor(databaseUrl).webhooks = rs.map((r) => ({ after: r.after, perSecond: r.perSecond }));
      // BENCH_REDIS_URL: the same on BullMQ, as production runs the job queue (the summary keeps the embedded figures).
      const redisUrl = process.env.BENCH_REDIS_URL;
      const onRedis = redisUrl ? await benchWebhooks({ calls, after, redisUrl, databaseUrl }) : [];
      const rows = [
        ['webhook deliveries (5,000 at once)', 'per second', 'p50 ms', 'p99 ms'],
        ...rs.map((r) => [`after ${fmt(r.after)} in the process`, f1(r.perSecond), f1(r.p50), f1(r.p99)]),
        ...onRedis.map((r) => [`after ${fmt(r.after)}, job queue on BullMQ`, f1(r.perSecond), f1(r.p50), f1(r.p99)]),
      ];
      const work = [
        ...rs.map((r) => `  after ${fmt(r.after)}: per delivery ${f1(r.appendsPerDelivery)} appends in ${f2(r.commitsPerDelivery)} commits and ${f2(r.syncsPerDelivery)} fsyncs of the event store\n    ${workLine(r.work)}\n`),
        ...onRedis.map((r) => `  after ${fmt(r.after)}, on BullMQ: ${cpuLine(r.work)}\n`),
      ];
      return `${table(rows)}\n  signed POSTs to a local receiver (a bare parser in a worker thread), from the CallEnded append to receipt, each round on the same platform after the deliveries before it (its warm-up)\n${work.join('')}`;
    }),
  },
  {
    name: 'dialer',
    run: async () => {
      const r = await benchDialerIngest();
      const u = await benchDialerUpload({ concurrent: envInt('BENCH_DIALER_CONCURRENT', 4) });
      const ping = (p: PingStats) => [fmt(p.p50, 1), fmt(p.p99, 1), fmt(p.max, 1), fmt(p.loopMaxMs ?? 0)];
      return (
        `${table([['dialer ingest', 'rows', 'seconds', 'peak RSS MiB'], ['100,000-row xlsx through readContacts', fmt(r.rows), fmt(r.seconds, 2), fmt(r.peakRssMiB)]])}\n\n` +
        `${table([
          ['POST /api/v1/dialer, 100,000-row xlsx', 'seconds', 'records s', 'RSS growth MiB', "other tenant's ping p50 ms", 'p99 ms', 'max ms', 'platform thread longest block ms'],
          ['no upload (1 s)', '', '', '', ...ping(u.idle)],
          ['one upload', fmt(u.seconds, 2), fmt(u.allSeconds, 2), fmt(u.peakRssGrowthMiB), ...ping(u.during)],
          [`${u.concurrent.uploads} uploads at once (${u.concurrent.uploads} tenants)`, fmt(u.concurrent.seconds, 2), fmt(u.concurrent.allSeconds, 2), fmt(u.concurrent.peakRssGrowthMiB), ...ping(u.concurrent.during)],
        ])}\n  seconds: until the answer (read on a thread of its own, contacts appended, the campaign's counts caught up); records s: until the contacts' records too (projected after the answer);\n  another tenant pings one request at a time from a worker thread, until the records are in\n`
      );
    },
  },
  {
    name: 'replay',
    run: async () => {
      const r = await benchReplay({ events: envInt('BENCH_REPLAY_EVENTS', 1_000_000), exportCalls: envInt('BENCH_EXPORT_CALLS', 100_000) });
      return `${table([
        ['analysts', 'events / calls', 'seconds', 'per second', 'CPU s', 'per CPU second'],
        [`telephony replay (${fmt(r.calls)} calls, agent changes, SMS)`, fmt(r.events), f1(r.replaySeconds), fmt(r.events / r.replaySeconds), f1(r.replayCpuSeconds), fmt(r.events / r.replayCpuSeconds)],
        ['agent report, a year', '', fmt(r.agentReportMs / 1000, 3), '', '', ''],
        ['service report, a year by day', '', fmt(r.serviceReportMs / 1000, 3), '', '', ''],
        [`xlsx export, peak RSS ${fmt(r.exportPeakRssMiB)} MiB (${fmt(r.exportBytes / 1048576, 1)} MiB written)`, fmt(r.exportCalls), f1(r.exportSeconds), fmt(r.exportCalls / r.exportSeconds), '', ''],
      ])}\n  log written in ${f1(r.writeSeconds)} s; replay into fresh stores in ${r.replayThreads} threads (load average ${fmt(r.replayLoad, 1)} at its start), then swapped in; reports over HTTP on the replayed stores\n`;
    },
  },
];

/** The bare baseline when issue 11 was filed: its PATCH figure, ≈1,200/s, was 0.03 × bare. */
const ISSUE_BARE = 40_000;

/**
 * Issue 11's table: each HTTP figure against the bare baseline of this run (a figure with errors is
 * left out); calls and deliveries have absolute targets, also shown as ratios.
 */
function summary(): string {
  const bare = figures.bare;
  if (!bare) return '';
  const x = (n: number | undefined) => (n === undefined ? 'n/a' : `${(n / bare).toFixed(2)} × bare`);
  const rows = [
    ['figure', 'measured', 'vs bare', 'target'],
    ['PATCH /api/v1/agents, 50 agents (own streams)', fmt(figures.rps['PATCH /api/v1/agents (50 agents)'] ?? 0), x(figures.rps['PATCH /api/v1/agents (50 agents)']), '≥ 0.30 × bare'],
    ['GET /api/v1/dashboard (50 agents)', fmt(figures.rps['GET /api/v1/dashboard (50 agents)'] ?? 0), x(figures.rps['GET /api/v1/dashboard (50 agents)']), '≥ 0.50 × bare'],
    ['GET /api/v1/agents (admin, 50 agents)', fmt(figures.rps['GET /api/v1/agents (50 agents)'] ?? 0), x(figures.rps['GET /api/v1/agents (50 agents)']), '≥ 0.50 × bare'],
    ['authenticated GET /api/v1/ping', fmt(figures.rps['GET /api/v1/ping'] ?? 0), x(figures.rps['GET /api/v1/ping']), '≥ 0.70 × bare'],
  ];
  const h = figures.history;
  if (h) rows.push([`command p50 at ${fmt(h.events)} events vs fresh`, `${f1(h.long.p50)} / ${f1(h.fresh.p50)} ms`, `${(h.long.p50 / h.fresh.p50).toFixed(2)} × fresh`, '≤ 1.5 × fresh']);
  // Absolute targets, shown also as ratios to this run's bare (3 decimals: they are small) beside the
  // ratios they were when the issue set them (ISSUE_BARE): a slower machine slows both alike.
  const r3 = (n: number) => `${(n / bare).toFixed(3)} × bare`;
  if (figures.calls !== undefined) rows.push(['complete simulated calls', `${f1(figures.calls)} calls/s`, r3(figures.calls), `≥ 500 calls/s (${(500 / ISSUE_BARE).toFixed(4)} ×)`]);
  for (const w of figures.webhooks ?? []) rows.push([`webhook deliveries, after ${fmt(w.after)}`, `${f1(w.perSecond)} /s`, r3(w.perSecond), `≥ 5,000 /s (${(5000 / ISSUE_BARE).toFixed(3)} ×)`]);
  const note =
    figures.calls !== undefined || figures.webhooks !== undefined
      ? `  calls and deliveries: the issue's targets are absolute; in brackets, what they were as ratios to the bare baseline of the machine it was\n  measured on (≈${fmt(ISSUE_BARE)} req/s: its PATCH at ≈1,200/s was 0.03 × bare)\n`
      : '';
  return `${table(rows)}\n  bare /ping: ${fmt(bare)} req/s in this run\n${note}${postgresSummary()}`;
}

/** The same figures on PostgreSQL (BENCH_DATABASE_URL), each against its own run's bare baseline. */
function postgresSummary(): string {
  const pgf = figures.pg;
  if (!pgf) return '';
  const bare = pgf.bare ?? figures.bare;
  const x = (n: number | undefined) => (n === undefined || !bare ? 'n/a' : `${(n / bare).toFixed(2)} × bare`);
  const patch = pgf.rps['PATCH /api/v1/agents (50 agents)'];
  const rows = [['on PostgreSQL', 'measured', 'vs bare', 'target']];
  if (pgf.bare) rows.push(['PATCH /api/v1/agents, 50 agents (own streams)', fmt(patch ?? 0), x(patch), '≥ 0.10 × bare']);
  for (const name of ['GET /api/v1/dashboard (50 agents)', 'GET /api/v1/agents (50 agents)', 'GET /api/v1/ping']) if (pgf.rps[name] !== undefined) rows.push([name, fmt(pgf.rps[name]!), x(pgf.rps[name]), '']);
  if (pgf.calls !== undefined) rows.push(['complete simulated calls', `${f1(pgf.calls)} calls/s`, bare ? `${(pgf.calls / bare).toFixed(3)} × bare` : 'n/a', '']);
  for (const w of pgf.webhooks ?? []) rows.push([`webhook deliveries, after ${fmt(w.after)}`, `${f1(w.perSecond)} /s`, bare ? `${(w.perSecond / bare).toFixed(3)} × bare` : 'n/a', '']);
  return `\n${table(rows)}\n`;
}

async function main() {
  const only = process.env.BENCH_SUITES?.split(',').map((s) => s.trim()).filter(Boolean);
  process.stdout.write(`cloud-telephony bench, node ${process.version}\n`);
  for (const suite of suites.filter((s) => !only || only.includes(s.name))) {
    process.stdout.write(`\n== ${suite.name}\n`);
    try {
      // The calls, webhooks and sip suites run in this process: BENCH_CPU_PROFILE profiles them whole.
      const run = suite.name === 'calls' || suite.name === 'webhooks' || suite.name === 'sip' ? () => profiled(`suite-${suite.name}`, () => suite.run()) : () => suite.run();
      process.stdout.write(`\n${await run()}`);
    } catch (err) {
      process.stderr.write(`\n${suite.name} failed: ${(err as Error).message}\n`);
      process.exitCode = 1;
    }
  }
  const s = summary();
  if (s) process.stdout.write(`\n== summary (issue 11)\n\n${s}`);
}

await main();
