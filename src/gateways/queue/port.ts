/**
 * Job queue port: named queues of JSON jobs, run by in-process handlers, with delays, a retry
 * schedule, dedupe by id and an inspectable failed state. Adapters: embedded (SQLite file in
 * DATA_DIR, polled) and BullMQ on Redis. One contract suite (test/gateways/queue.contract.ts)
 * holds both to every promise below.
 *
 * Promises:
 * - **Durable**: once `enqueue` resolves, the job survives a restart of the process (and, for the
 *   embedded adapter, a crash: the write is synced). It runs after the restart when a handler for
 *   its queue is registered.
 * - **Dedupe**: a job is identified by (queue, id). Enqueuing an id that already exists, in any state
 *   (waiting, delayed, active, completed, failed), is a no-op. Completed jobs are remembered for
 *   `COMPLETED_RETENTION_MS` at least, so an id re-enqueued within that window never runs twice.
 * - **Delays**: a job runs no earlier than `runAt` (epoch ms) or `delayMs` from now; timing is best
 *   effort (the embedded adapter polls; expect tens of milliseconds of lateness).
 * - **Retries**: when the handler throws (or rejects), the job runs again after `backoffMs[0]`, then
 *   `backoffMs[1]`, ...; after the last delay's attempt fails it is `failed`, with the last error,
 *   and stays inspectable with `getJob`. `backoffMs: []` (default) means one attempt only. Throwing a
 *   {@link PermanentJobError} fails the job at once, skipping the remaining schedule.
 * - **At least once, never after completion**: a job that completed is never run again. A job
 *   interrupted mid-run by a crash is run again later (attempts counting on), so handlers must be
 *   idempotent: derive side effects from the job id, check before acting.
 * - **Concurrency**: `process(queue, handler, { concurrency })` runs at most `concurrency` jobs of
 *   that queue at once in this process (default 1). Jobs of one queue run in no particular order.
 */

/** What a handler receives. */
export interface Job<P = unknown> {
  queue: string;
  id: string;
  payload: P;
  /** 1 on the first run, 2 on the first retry, ... */
  attempt: number;
  /** Attempts the retry schedule allows in all (`backoffMs.length + 1`). */
  maxAttempts: number;
}

export interface EnqueueOptions<P = unknown> {
  /** Unique within the queue; enqueuing it again is a no-op. Any non-empty string up to 200 characters. */
  id: string;
  /** JSON-serialisable. */
  payload: P;
  /** Epoch ms before which the job does not run. */
  runAt?: number;
  /** Alternative to `runAt`: ms from now. */
  delayMs?: number;
  /** Delays (ms) before each retry; its length is the number of retries. Default: no retry. */
  backoffMs?: number[];
}

export type JobState = 'waiting' | 'delayed' | 'active' | 'completed' | 'failed';

export interface JobInfo<P = unknown> {
  queue: string;
  id: string;
  payload: P;
  state: JobState;
  /** Runs started so far. */
  attempts: number;
  /** Message of the last error, null when none. */
  lastError: string | null;
}

export type JobHandler<P = unknown> = (job: Job<P>) => Promise<void>;

export interface ProcessOptions {
  /** Jobs of this queue run at once in this process. Default 1. */
  concurrency?: number;
}

export interface JobQueue {
  /** Stores the job (durably) unless a job with this id exists in the queue. */
  enqueue<P>(queue: string, job: EnqueueOptions<P>): Promise<void>;
  /** Starts running jobs of `queue` with `handler`. One handler per queue and process. */
  process<P>(queue: string, handler: JobHandler<P>, options?: ProcessOptions): void;
  /** The job's state, or null when no such job is known (never enqueued, or pruned after retention). */
  getJob<P = unknown>(queue: string, id: string): Promise<JobInfo<P> | null>;
  /** Jobs of each named queue waiting to run (due or delayed; neither running nor finished). */
  waitingCounts(queues: string[]): Promise<Record<string, number>>;
  /** Stops taking jobs, waits for running handlers to finish, releases connections. */
  close(): Promise<void>;
  /**
   * Rejects (503 UNAVAILABLE) when the queue's server cannot be reached now, within a second; a
   * command that enqueues checks it before it appends, so an outage answers 503 with nothing done.
   * Absent: the queue is always reachable (embedded).
   */
  ready?(): Promise<void>;
  /**
   * Called by a process that has just become the one worker (it holds the worker lease): jobs still
   * running under another process's claim are that process's orphans (it died, or lost the lease and
   * stops), so they run again now rather than when their lease lapses. Absent: the queue's server
   * finds stalled jobs itself (BullMQ).
   */
  takeOverRunning?(): Promise<void>;
}

/** Thrown by a handler: the job fails now, without the remaining retries. */
export class PermanentJobError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PermanentJobError';
  }
}

/**
 * Is this a {@link PermanentJobError}? By its name too: one thrown by a copy of this module (the
 * built code's next to the sources', as tests load them) is not an instance of this class.
 */
export const isPermanentJobError = (err: unknown): err is Error => err instanceof PermanentJobError || (err instanceof Error && err.name === 'PermanentJobError');

/** Completed jobs are remembered (for dedupe) at least this long. */
export const COMPLETED_RETENTION_MS = 7 * 24 * 3600 * 1000;

const QUEUE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** Validates what every adapter accepts; adapters call it first. */
export function checkEnqueue(queue: string, job: EnqueueOptions): void {
  checkQueueName(queue);
  if (typeof job.id !== 'string' || job.id.length === 0 || job.id.length > 200) throw new Error('job id must be a string of 1 to 200 characters');
  for (const d of job.backoffMs ?? []) if (!Number.isFinite(d) || d < 0) throw new Error('backoffMs must hold non-negative numbers');
}

export function checkQueueName(queue: string): void {
  if (!QUEUE_NAME.test(queue)) throw new Error(`queue name "${queue}" must be letters, digits, _ . - (up to 64)`);
}

/** When a job should first run, given its options. */
export function firstRunAt(job: Pick<EnqueueOptions, 'runAt' | 'delayMs'>, now: number): number {
  if (job.runAt !== undefined) return job.runAt;
  if (job.delayMs !== undefined) return now + job.delayMs;
  return now;
}

export const errorMessage = (err: unknown): string => (err instanceof Error ? err.message : String(err));
