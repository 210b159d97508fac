/**
 * Job queue on BullMQ (Redis). One BullMQ queue per named queue, under a key prefix; the retry
 * schedule travels with the job and a custom backoff strategy reads it. Job ids are escaped
 * (BullMQ refuses `:` and integer-looking ids). Completed jobs are kept for the retention window,
 * failed jobs until removed, so dedupe and inspection work as the port promises. A job whose
 * worker died is moved back to waiting by BullMQ's stalled check (after the lock lapses) and run
 * again; the stall count is set high so a crash never fails a job by itself.
 */
import { Queue, UnrecoverableError, Worker, type Job as BullJob } from 'bullmq';
import { keyPrefix, openRedis, type RedisClient } from '../redis-client.js';
import { AppError, unavailable } from '../../domain/errors.js';

/** How long a command waits for Redis before answering 503 (well inside a request's time limit). */
const REDIS_WAIT_MS = 2000;

/** Rejects with UNAVAILABLE when `p` has not settled within `ms`. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(unavailable(`${what}: Redis did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
import {
  COMPLETED_RETENTION_MS,
  isPermanentJobError,
  checkEnqueue,
  checkQueueName,
  firstRunAt,
  type EnqueueOptions,
  type JobHandler,
  type JobInfo,
  type JobQueue,
  type JobState,
  type ProcessOptions,
} from './port.js';

export interface BullmqQueueOptions {
  /** Redis key prefix; default `ct` (on a Redis Cluster wrapped in a hash tag, `{ct}`: every queue's keys in one slot). */
  prefix?: string;
  /** A running job's lock; a crashed run is taken again after it lapses. Default 30 s. */
  lockDurationMs?: number;
  /** How often workers look for stalled (crashed) jobs. Default 30 s. */
  stalledIntervalMs?: number;
  /** Receives connection and worker errors (they are retried by the client). */
  onError?: (err: Error) => void;
}

interface Data {
  p: unknown;
  /** Retry schedule, ms. */
  b: number[];
}

/** BullMQ job ids may not contain `:` nor look like integers. */
const encodeId = (id: string) => `j.${id.replace(/%/g, '%25').replace(/:/g, '%3A')}`;
const decodeId = (id: string) => id.slice(2).replace(/%3A/g, ':').replace(/%25/g, '%');

export class BullmqJobQueue implements JobQueue {
  private readonly connection: RedisClient;
  private readonly queues = new Map<string, Queue>();
  private readonly workers = new Map<string, Worker>();
  private readonly prefix: string;
  private closed = false;

  constructor(
    url: string,
    private readonly options: BullmqQueueOptions = {},
  ) {
    // BullMQ's scripts take several keys of a queue (and a job's flow keys of others): on a cluster
    // they must hash to one slot, which the tag in the prefix ensures.
    this.prefix = keyPrefix(url, options.prefix ?? 'ct');
    this.connection = openRedis(url, { maxRetriesPerRequest: null, lazyConnect: false });
    this.connection.on('error', (err) => this.options.onError?.(err));
  }

  private queue(name: string): Queue {
    let q = this.queues.get(name);
    if (!q) {
      q = new Queue(name, { connection: this.connection, prefix: this.prefix });
      q.on('error', (err) => this.options.onError?.(err));
      this.queues.set(name, q);
    }
    return q;
  }

  /**
   * Resolves once the connection is ready (at once when it is); a connection still being set up
   * is waited for, one that is reconnecting (Redis down) or closed is 503 at once.
   */
  private async connected(): Promise<void> {
    const st = this.connection.status;
    if (st === 'ready') return;
    if (st !== 'connecting' && st !== 'connect' && st !== 'wait') throw unavailable('the job queue (Redis) is unreachable; nothing was done');
    if (st === 'wait') void this.connection.connect().catch(() => {});
    await within(
      new Promise<void>((resolve) => this.connection.once('ready', () => resolve())),
      REDIS_WAIT_MS,
      'the job queue',
    );
  }

  async ready(): Promise<void> {
    await this.connected();
    await within(this.connection.ping(), 1000, 'the job queue').catch((err) => {
      throw err instanceof AppError ? err : unavailable('the job queue (Redis) is unreachable; nothing was done');
    });
  }

  async enqueue<P>(queue: string, job: EnqueueOptions<P>): Promise<void> {
    checkEnqueue(queue, job);
    if (this.closed) throw new Error('job queue is closed');
    // With Redis down the client would hold the command until it reconnects: answer 503 instead.
    await this.connected();
    try {
      await within(this.enqueueNow(queue, job), REDIS_WAIT_MS, 'enqueue');
    } catch (err) {
      // A connection lost mid-command: the queue is unavailable, not the request malformed.
      if (err instanceof AppError) throw err;
      throw unavailable(`the job queue (Redis) failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  private async enqueueNow<P>(queue: string, job: EnqueueOptions<P>): Promise<void> {
    const backoff = job.backoffMs ?? [];
    const delay = Math.max(0, firstRunAt(job, Date.now()) - Date.now());
    const data: Data = { p: job.payload ?? null, b: backoff };
    // add() with an existing jobId is a no-op in BullMQ, whatever the job's state.
    await this.queue(queue).add(queue, data, {
      jobId: encodeId(job.id),
      delay,
      attempts: backoff.length + 1,
      backoff: { type: 'schedule' },
      removeOnComplete: { age: Math.ceil(COMPLETED_RETENTION_MS / 1000) },
      removeOnFail: false,
    });
  }

  process<P>(queue: string, handler: JobHandler<P>, options: ProcessOptions = {}): void {
    checkQueueName(queue);
    if (this.closed) throw new Error('job queue is closed');
    if (this.workers.has(queue)) throw new Error(`queue ${queue} already has a handler in this process`);
    const worker = new Worker<Data>(
      queue,
      async (job: BullJob<Data>) => {
        try {
          await handler({
            queue,
            id: decodeId(job.id!),
            payload: job.data.p as P,
            attempt: Math.max(1, job.attemptsStarted),
            maxAttempts: job.data.b.length + 1,
          });
        } catch (err) {
          if (isPermanentJobError(err)) throw new UnrecoverableError(err.message);
          throw err;
        }
      },
      {
        connection: this.connection,
        prefix: this.prefix,
        concurrency: Math.max(1, options.concurrency ?? 1),
        lockDuration: this.options.lockDurationMs ?? 30_000,
        stalledInterval: this.options.stalledIntervalMs ?? 30_000,
        maxStalledCount: 1_000_000,
        settings: {
          backoffStrategy: (attemptsMade: number, _type?: string, _err?: Error, job?: { data: Data }) => job?.data.b[attemptsMade - 1] ?? 0,
        },
      },
    );
    worker.on('error', (err) => this.options.onError?.(err));
    this.workers.set(queue, worker);
  }

  async getJob<P = unknown>(queue: string, id: string): Promise<JobInfo<P> | null> {
    checkQueueName(queue);
    const job = (await this.queue(queue).getJob(encodeId(id))) as BullJob<Data> | undefined;
    if (!job) return null;
    const raw = await job.getState();
    const state: JobState | null =
      raw === 'completed' || raw === 'failed' || raw === 'delayed' || raw === 'active' || raw === 'waiting'
        ? raw
        : raw === 'prioritized' || raw === 'waiting-children'
          ? 'waiting'
          : null;
    if (!state) return null;
    return { queue, id, payload: job.data.p as P, state, attempts: job.attemptsStarted, lastError: job.failedReason || null };
  }

  async waitingCounts(queues: string[]): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const name of queues) {
      checkQueueName(name);
      const c = await this.queue(name).getJobCounts('waiting', 'delayed', 'prioritized');
      out[name] = (c.waiting ?? 0) + (c.delayed ?? 0) + (c.prioritized ?? 0);
    }
    return out;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // With Redis unreachable a graceful close would wait for it forever: let running jobs end, then
    // drop the connection (their locks lapse and another worker takes them, as after a crash).
    const up = this.connection.status === 'ready';
    const graceful = (async () => {
      await Promise.allSettled([...this.workers.values()].map((w) => w.close(!up)));
      await Promise.allSettled([...this.queues.values()].map((q) => q.close()));
      if (up) await this.connection.quit().catch(() => this.connection.disconnect());
    })();
    await within(graceful, up ? 10_000 : REDIS_WAIT_MS, 'close').catch(() => {});
    this.connection.disconnect();
  }

  /**
   * Test aid: behaves like a crash. Drops the connections at once; running jobs keep their lock
   * until it lapses, then BullMQ's stalled check hands them to another worker.
   */
  async abandon(): Promise<void> {
    this.closed = true;
    for (const w of this.workers.values()) {
      w.removeAllListeners();
      w.on('error', () => {});
      void w.close(true).catch(() => {});
    }
    this.connection.disconnect();
    for (const q of this.queues.values()) void q.close().catch(() => {});
  }
}
