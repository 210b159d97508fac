/**
 * Builds the platform from config: adapters behind the ports, then the roles this process runs.
 * Used by main, the CLI, end-to-end tests and the benchmark alike.
 */
import path from 'node:path';
import { readFile } from 'node:fs/promises';
import pino, { type Logger } from 'pino';
import type { FastifyInstance } from 'fastify';
import { ConfigError, type Config } from './config.js';
import { AppError } from './domain/errors.js';
import type { Context } from './context.js';
import type { EventStore } from './gateways/event-store/port.js';
import type { ReadStore } from './gateways/read-store/port.js';
import { canRunThreads } from './gateways/sqlite-thread.js';
import type { JobQueue } from './gateways/queue/port.js';
import { EmbeddedJobQueue } from './gateways/queue/embedded.js';
import { BullmqJobQueue } from './gateways/queue/bullmq.js';
import { openEventStore, openReadStore } from './gateways/stores.js';
export { openEventStore, openReadStore, READ_STORE_COALESCE_MS } from './gateways/stores.js';
import { ProjectionRunner } from './projections/runner.js';
import { projections } from './projections/index.js';
import { localReadSync, remoteReadSync } from './projections/read-sync.js';
import { buildApp } from './http/app.js';
import { applyProvisioning } from './commands/provisioning/provision.js';
import { RecordingSigner } from './domain/recording.js';
import { loadSigningKey } from './commands/platform-key.js';
import { CursorCodec } from './domain/cursor.js';
import { SimulatedSwitch } from './gateways/switch/simulator.js';
import { listenSip, newSipSwitch } from './sip-setup.js';
import { sipAccounts, sipDialogs } from './workers/call-flow/sip-accounts.js';
import { CallFlow } from './workers/call-flow/manager.js';
import { QueueAlertMonitor } from './workers/queue-alerts/monitor.js';
import type { QueueAlertDoc } from './projections/queue-alerts.js';
import { startSmsSender } from './workers/sms/sender.js';
import { startScheduledCalls } from './workers/scheduler/scheduled-calls.js';
import type { Follower } from './workers/follower.js';
import { DialerEngine } from './workers/dialer/engine.js';
import type { SmsGateway } from './gateways/sms/port.js';
import { SimulatedSmsGateway } from './gateways/sms/simulator.js';
import { startDeliveryWorker, type DeliveryWorker } from './workers/delivery/index.js';
import { EventSocketServer } from './workers/socket/server.js';
import { SqliteLease } from './gateways/lease/sqlite.js';
import { RedisLease } from './gateways/lease/redis.js';
import { PostgresLease } from './gateways/lease/postgres.js';
import type { Lease } from './gateways/lease/port.js';
import { LeaseKeeper } from './workers/lease-keeper.js';

/** The worker lease runs out this long after its holder's last renewal (a dead pid loses it at once). */
export const WORKER_LEASE_TTL_MS = 10_000;
/** In Redis (and PostgreSQL) no pid can be checked: a shorter TTL bounds the takeover after a crash. */
export const WORKER_REDIS_LEASE_TTL_MS = 5_000;

/**
 * Where the worker lease lives: in DATA_DIR beside the embedded event store (every process of a
 * deployment shares it, as it shares the log); in Redis when the event store is KurrentDB and
 * Redis is set (processes may share no disk); in PostgreSQL when DATABASE_URL is set (otherwise). A
 * worker of a split deployment (ROLES without every role) on a server event store with no shared
 * lease is refused: a file lease is local to one host, and two hosts would each hold their own.
 */
export function openWorkerLease(config: Config): Lease {
  if (config.eventStoreUrl && config.redisUrl) return new RedisLease(config.redisUrl, 'worker', WORKER_REDIS_LEASE_TTL_MS, config.redisPrefix);
  if (config.databaseUrl) return new PostgresLease(config.databaseUrl, 'worker', WORKER_REDIS_LEASE_TTL_MS);
  if (config.eventStoreUrl && config.roles.size < ALL_ROLE_COUNT) {
    throw new ConfigError(
      `ROLES=${[...config.roles].join(',')} with EVENTSTORE_URL needs a worker lease all hosts share: set REDIS_URL or DATABASE_URL (the file lease in DATA_DIR is local to one host)`,
    );
  }
  return new SqliteLease(path.join(config.dataDir, 'lease.db'), 'worker', WORKER_LEASE_TTL_MS);
}

const ALL_ROLE_COUNT = 4;
import { shareAggregateCache, useSnapshots } from './commands/aggregate-cache.js';
import { Fence } from './gateways/event-store/fence.js';
import { SqliteSnapshotStore } from './gateways/snapshot-store/sqlite.js';
import { HotReadStore } from './gateways/read-store/hot.js';

/** Read models answered from memory where the projector runs: small, and read on every hot request. */
/** Documents a commit of the lagging read models writes: one upload chunk's contacts. */
const LAGGING_BATCH_DOCS = CONTACTS_PER_CHUNK;

export const HOT_COLLECTIONS: ReadonlySet<string> = new Set(['services', 'users', 'usernames', 'agents', 'call-stats', 'in-ivr', 'queued-callers', 'subscribers']);
import { PlatformMetrics } from './ops/metrics.js';
import { Readiness } from './ops/readiness.js';
import { CONTACTS_PER_CHUNK } from './domain/packed-contacts.js';
import { startHealthServer, type HealthServer } from './ops/health-server.js';
import { countingAppends } from './ops/counting-event-store.js';
import { DELIVERY_QUEUE } from './workers/delivery/sender.js';
import { SMS_QUEUE } from './workers/sms/sender.js';
import { SCHEDULE_QUEUE } from './workers/scheduler/scheduled-calls.js';
import type { ActiveCallDoc } from './projections/active-calls.js';
import { AnalyticsStore } from './analytics/store.js';
import { analyticsProjector, analyticsReader } from './analytics/projector.js';
import { analyticsThread, canRunAnalyticsThread } from './analytics/thread.js';

export interface Platform {
  ctx: Context;
  app: FastifyInstance | null;
  runner: ProjectionRunner | null;
  callFlow: CallFlow | null;
  dialer: DialerEngine | null;
  /** The event socket (role `socket`). */
  socket: EventSocketServer | null;
  /** The `worker` role's lease: one active worker per DATA_DIR, others stand by (null without the role). */
  workerLease: LeaseKeeper | null;
  /** Listens on the configured ports; resolves with the HTTP address and the event socket's port. */
  start(): Promise<{ httpUrl: string | null; socketPort: number | null }>;
  /** Graceful: stop accepting, finish in-flight requests, stop workers, close stores. */
  stop(): Promise<void>;
}

/** The platform's logger: JSON lines on stdout (or `destination`, e.g. a test capturing the log). */
export function createLogger(config: Config, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level: config.logLevel,
    // Secrets never reach the log.
    redact: { paths: ['req.headers.authorization', 'password', '*.password', '*.passwordHash', 'secret', '*.secret', 'socketKey'], censor: '[redacted]' },
  };
  return destination ? pino(options, destination) : pino(options);
}

/** PROVISION_FILE at start: a file that cannot be read or parsed is a configuration error. */
async function readProvisionFile(file: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`PROVISION_FILE ${file}: ${(err as Error).message}`);
  }
}

/** A document the platform refuses is a configuration error too. */
async function applyProvisionFile(events: EventStore, file: string, doc: unknown) {
  try {
    return await applyProvisioning(events, doc);
  } catch (err) {
    if (err instanceof AppError) throw new ConfigError(`PROVISION_FILE ${file} refused: ${err.message}`);
    throw err;
  }
}

/** The analysts' read models: embedded in DATA_DIR whatever the other stores are (range queries, snapshots). */
export function openAnalyticsStore(config: Config, file = 'analytics.db'): AnalyticsStore {
  return new AnalyticsStore(path.join(config.dataDir, file));
}

export function openJobQueue(config: Config, logger?: Logger, now: () => number = Date.now): JobQueue {
  // A job whose worker died (or lost Redis) mid-run is taken again once its 15 s lock lapses (checked
  // every 5 s), not after BullMQ's default 30 s + 30 s; handlers are short and idempotent.
  if (config.redisUrl) return new BullmqJobQueue(config.redisUrl, { prefix: config.redisPrefix, onError: (err) => logger?.warn({ err }, 'job queue: redis error'), lockDurationMs: 15_000, stalledIntervalMs: 5_000 });
  const file = path.join(config.dataDir, 'jobs.db');
  return new EmbeddedJobQueue(file, { now, thread: config.embeddedThreads && canRunThreads(file) });
}

export async function createPlatform(config: Config, options: { logger?: Logger; now?: () => number; sms?: SmsGateway; queue?: JobQueue } = {}): Promise<Platform> {
  // First: a worker that cannot have a shared lease is refused before anything opens.
  const lease = config.roles.has('worker') ? openWorkerLease(config) : null;
  const logger = options.logger ?? createLogger(config);
  const now = options.now ?? Date.now;
  const metrics = new PlatformMetrics();
  const log = await openEventStore(config, now, logger);
  const events = countingAppends(log, metrics);
  let storedReads: ReadStore;
  try {
    storedReads = await openReadStore(config, now);
  } catch (err) {
    await events.close();
    throw err;
  }
  // With the projector in this process every read-model write passes here: hot models answer from memory.
  const reads = config.roles.has('projector') && storedReads.scan ? new HotReadStore(storedReads, HOT_COLLECTIONS) : storedReads;
  // Aggregate snapshots: a cache beside the log, whatever the event store is.
  const snapshots = new SqliteSnapshotStore(path.join(config.dataDir, 'snapshots.db'));
  useSnapshots(events, snapshots);
  const queue = options.queue ?? openJobQueue(config, logger, now);
  const startHead = await events.headPosition();
  // The lagging read models (a dialer upload's contacts) on a runner of their own, one chunk's
  // contacts a commit: requests wait for the others only (see ReadSync).
  const leading = projections.filter((p) => !p.lagging);
  const lagging = projections.filter((p) => p.lagging);
  const runner = config.roles.has('projector') ? new ProjectionRunner(events, reads, leading, { logger }) : null;
  const laggingRunner = runner && lagging.length ? new ProjectionRunner(events, reads, lagging, { logger, maxBatchDocs: LAGGING_BATCH_DOCS }) : null;
  const sync = runner
    ? localReadSync(events, runner, laggingRunner ?? undefined)
    : remoteReadSync(events, reads, leading.map((p) => p.name), lagging.map((p) => p.name));
  const platformKey = await loadSigningKey(events);
  const signer = new RecordingSigner(platformKey, config.publicBaseUrl);
  const cursors = new CursorCodec(platformKey);
  const sms = options.sms ?? new SimulatedSmsGateway(reads, now);
  const projectedPosition = async () => {
    if (runner) return Math.min(runner.position, laggingRunner?.position ?? Infinity);
    return reads.lowestCheckpoint(projections.map((p) => p.name));
  };
  const jobQueues = [DELIVERY_QUEUE, SMS_QUEUE, SCHEDULE_QUEUE];
  const readiness = new Readiness({
    startHead,
    projectedPosition,
    stores: {
      'event store': () => events.headPosition(),
      'read store': () => reads.checkpoint(projections[0]!.name),
      'job queue': () => queue.waitingCounts(jobQueues.slice(0, 1)),
    },
  });
  metrics.sources.projectionLag = async () => Math.max(0, (await events.headPosition()) - (await projectedPosition()));
  metrics.sources.jobsWaiting = () => queue.waitingCounts(jobQueues);
  metrics.sources.queueAlerts = () => reads.find<QueueAlertDoc>('queue-alerts');
  metrics.sources.activeCalls = async () => {
    const bySvc = new Map<number, number>();
    for (const c of await reads.find<ActiveCallDoc>('active-calls')) bySvc.set(c.svcId, (bySvc.get(c.svcId) ?? 0) + 1);
    return bySvc;
  };
  // The analysts' models are embedded files: an `api` process reads the projector's beside it in a
  // shared DATA_DIR; on KurrentDB or PostgreSQL processes share no disk, so it builds its own from the log.
  const ownAnalytics = !config.roles.has('projector') && config.roles.has('api') && Boolean(config.eventStoreUrl || config.databaseUrl);
  const analyticsStore = openAnalyticsStore(config, ownAnalytics ? 'analytics-api.db' : undefined);
  // Folded here on the embedded log: on a thread of its own in the built code (its own connections
  // to both files), which leaves this thread only the queries.
  const analytics = !(config.roles.has('projector') || ownAnalytics)
    ? analyticsReader(events, analyticsStore)
    : config.embeddedThreads && canRunAnalyticsThread(log)
      ? analyticsThread(log, analyticsStore, logger)
      : analyticsProjector(events, analyticsStore, logger);
  const ctx: Context = { config, events, reads, queue, sync, logger, now, signer, cursors, sms, metrics, readiness, analytics };
  // The worker appends through the fence: once a newer worker holding armed it, this one's appends are refused.
  const fence = new Fence(events);
  const workerEvents = fence.guard(events);
  shareAggregateCache(workerEvents, events);
  const workerCtx: Context = { ...ctx, events: workerEvents };
  const app = config.roles.has('api') ? await buildApp(ctx) : null;
  const sipSwitch = config.roles.has('worker') && config.switch.kind === 'sip' ? newSipSwitch(config, logger, now, sipAccounts(ctx), sipDialogs(ctx)) : null;
  const callFlow = config.roles.has('worker')
    ? new CallFlow(workerCtx, sipSwitch ?? new SimulatedSwitch({ answerMs: config.simAnswerMs, ringTimeoutMs: config.simRingTimeoutMs, talkMs: config.simTalkMs, now }), signer)
    : null;
  const dialer = config.roles.has('worker') ? new DialerEngine(workerCtx) : null;
  const alerts = config.roles.has('worker') ? new QueueAlertMonitor(workerCtx) : null;
  const socket = config.roles.has('socket') ? new EventSocketServer(ctx, { host: config.host, port: config.socketPort, maxConnectionsPerAddress: config.socketMaxPerAddress }) : null;
  if (socket) {
    metrics.sources.socketClients = () => socket.stats().authenticated;
    metrics.sources.socketRefused = () => {
      const s = socket.stats();
      return { per_address: s.refusedPerAddress, pending: s.refusedPending };
    };
  }
  let stopped = false;
  let health: HealthServer | null = null;
  const followers: Follower[] = [];
  let delivery: DeliveryWorker | null = null;
  // The worker owns the switch and runs once: everything it does, crash recovery first, runs only
  // while this process holds the lease; a second worker waits as a standby and takes over.
  const workerLease = lease
    ? new LeaseKeeper(
        lease,
        {
          async start() {
            // A worker killed before us held its running jobs' claims; only this process runs jobs now.
            await ctx.queue.takeOverRunning?.();
            await callFlow!.start();
            followers.push(await startSmsSender(workerCtx));
            followers.push(await startScheduledCalls(workerCtx));
            await dialer!.start();
            alerts!.start();
            delivery = await startDeliveryWorker(workerCtx);
          },
          async stop() {
            if (delivery) await delivery.stop();
            delivery = null;
            for (const f of followers.splice(0)) await f.stop();
            await dialer!.stop();
            await alerts!.stop();
            await callFlow!.stop();
          },
        },
        logger,
        { fence },
      )
    : null;

  return {
    ctx,
    app,
    runner,
    callFlow,
    dialer,
    socket,
    workerLease,
    async start() {
      // The provisioning file is read before anything starts: a missing or broken file is one error line.
      const provisionDoc = config.provisionFile ? await readProvisionFile(config.provisionFile) : undefined;
      // Ports first: a second start with the same ports fails here, before it touches anything.
      let httpUrl: string | null = null;
      if (app) httpUrl = await app.listen({ host: config.host, port: config.port });
      if (httpUrl && !config.publicBaseUrlSet) signer.setBaseUrl(httpUrl);
      const socketPort = socket ? (await socket.start()).port : null;
      // Without the API, HEALTH_PORT gives the orchestrator its /healthz and /readyz.
      if (!app && config.healthPort !== undefined) {
        health = await startHealthServer(readiness, config.host, config.healthPort);
        logger.info({ port: health.port }, 'health endpoints listening');
      }
      if (sipSwitch) await listenSip(sipSwitch, config);
      if (runner) await runner.start();
      if (laggingRunner) await laggingRunner.start();
      await analytics.start();
      if (workerLease) await workerLease.start();
      if (config.provisionFile) {
        const result = await applyProvisionFile(events, config.provisionFile, provisionDoc);
        await sync.waitFor(result.position);
        logger.info({ file: config.provisionFile, appended: result.appended }, 'provisioning file applied');
      }
      return { httpUrl, socketPort };
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      if (socket) await socket.stop();
      if (app) await app.close();
      if (health) await health.close();
      // Stop what plans work, then jobs (they append events), then what reacts to events, then the projector.
      if (delivery) await delivery.stop();
      delivery = null;
      await queue.close();
      // The rest of the worker, then the lease (a standby takes over at once).
      if (workerLease) await workerLease.stop();
      // Closed with the call flow when this worker ran; a standby's own SIP port closes here.
      await sipSwitch?.close();
      if (runner) await runner.stop();
      if (laggingRunner) await laggingRunner.stop();
      await analytics.stop();
      await reads.close();
      await events.close();
      snapshots.close();
    },
  };
}
