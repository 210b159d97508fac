/**
 * The analytics projector on a thread of its own, where the log is the embedded SQLite file: folding
 * and writing analytics.db took about a tenth of the platform thread's time per command, and a second
 * core is usually idle. The thread opens its own connections (it reads events.db, writes
 * analytics.db) and runs `analyticsProjector` unchanged; the platform thread keeps a connection to
 * analytics.db for the queries and never writes it.
 *
 * Messages: the thread posts each position it has written (so `caughtUp` waits on it as on the
 * projector in the same thread); the platform thread tells it of the heads its own appends reach, at
 * most one message in flight (the thread would otherwise learn of them only at its subscription's
 * 250 ms poll). A thread that dies or fails makes `caughtUp` answer 503 until a new one, started
 * after a pause, has loaded the models from the stored checkpoint.
 *
 * Only the built code can start the thread (it loads this file's compiled JavaScript); run from the
 * TypeScript sources (tests), the projector stays in the platform thread.
 */
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import type { Logger } from 'pino';
import { canRunThreads } from '../gateways/sqlite-thread.js';
import { SqliteEventStore } from '../gateways/event-store/sqlite.js';
import { PositionWaiters } from '../projections/position-waiters.js';
import { unavailable } from '../domain/errors.js';
import { AnalyticsStore } from './store.js';
import { analyticsProjector, type Analytics } from './projector.js';

const WORKER_TASK = 'analytics-projector';

interface ThreadData {
  task: typeof WORKER_TASK;
  eventsFile: string;
  analyticsFile: string;
}

interface SerialisedError {
  name: string;
  message: string;
  stack?: string | undefined;
}

type ToThread = { head: number } | { stop: true };
type FromThread =
  /** Loaded from the checkpoint: folding from `ready`. */
  | { ready: number }
  /** Written up to here. */
  | { position: number }
  | { log: 'warn' | 'error'; msg: string; err: SerialisedError }
  /** The projector stopped for good: the platform thread ends this thread and starts another. */
  | { failed: SerialisedError };

/** A new thread after this pause, doubled after each one that made no progress (up to the cap). */
const RESTART_MS = 100;
const MAX_RESTART_MS = 10_000;
/** A thread asked to stop that has not ended by then is ended. */
const STOP_TIMEOUT_MS = 30_000;

const serialise = (err: unknown): SerialisedError =>
  err instanceof Error ? { name: err.name, message: err.message, stack: err.stack } : { name: 'Error', message: String(err) };
const revive = (e: SerialisedError): Error => Object.assign(new Error(e.message), { name: e.name, stack: e.stack });

/** The built code, on the embedded log in a file: where the projector may run on its own thread. */
export function canRunAnalyticsThread(events: unknown): events is SqliteEventStore {
  return events instanceof SqliteEventStore && events.file !== '' && canRunThreads(events.file);
}

export interface ThreadedAnalytics extends Analytics {
  /** The position the thread last reported written. */
  readonly position: number;
  /** Ends the thread as a crash would (tests): resolves once its loss is handled. */
  kill(): Promise<void>;
}

/**
 * The analytics models folded on a thread of its own. `events` is this process's log (the thread
 * opens the same file), `store` this thread's connection to the analytics store (for queries).
 */
export function analyticsThread(events: SqliteEventStore, store: AnalyticsStore, logger?: Pick<Logger, 'error' | 'warn'>): ThreadedAnalytics {
  const data: ThreadData = { task: WORKER_TASK, eventsFile: events.file, analyticsFile: store.file };
  const waiters = new PositionWaiters();
  let worker: Worker | null = null;
  /** No thread answers now (dead, failed, or not yet loaded after a restart): caughtUp answers 503. */
  let down: Error | null = null;
  let stopping = false;
  let restartTimer: NodeJS.Timeout | null = null;
  let restartMs = RESTART_MS;
  /** The first start's outcome: start() waits for the models to be loaded. */
  let started: { resolve: () => void; reject: (err: unknown) => void } | null = null;
  let exited: Promise<void> = Promise.resolve();

  // What the thread was told and has reported: one head message in flight at most.
  let position = 0;
  let readyAt = 0;
  let head = 0;
  let told = 0;
  let ready = false;
  let tellScheduled = false;

  const tell = () => {
    tellScheduled = false;
    // The thread reads everything committed once woken; a newer head is told when it has caught up
    // with the last one told (it may have read that far already).
    if (!worker || !ready || head <= told || position < told) return;
    told = head;
    worker.postMessage({ head } satisfies ToThread);
  };
  const offAppended = events.onAppended((h) => {
    if (h > head) head = h;
    if (!tellScheduled && ready) {
      // Appends of one turn share a message.
      tellScheduled = true;
      setImmediate(tell);
    }
  });

  const advance = (p: number) => {
    if (p > position) position = p;
    waiters.advance(p);
    if (head > told && position >= told) tell();
  };

  const lost = (w: Worker, why: string, err?: Error) => {
    if (worker !== w) return;
    worker = null;
    ready = false;
    void w.terminate();
    if (stopping) return;
    down = unavailable('the analytics read models are not available');
    logger?.error({ err }, `analytics thread ${why}; starting another`);
    waiters.fail(down);
    if (started) {
      started.reject(err ?? new Error(`analytics thread ${why}`));
      started = null;
      return;
    }
    restartTimer = setTimeout(() => {
      restartTimer = null;
      spawn();
    }, restartMs);
    restartTimer.unref();
    restartMs = Math.min(MAX_RESTART_MS, restartMs * 2);
  };

  const spawn = () => {
    const w = new Worker(new URL(import.meta.url), { workerData: data });
    worker = w;
    told = 0;
    exited = new Promise((resolve) => w.once('exit', () => resolve()));
    w.on('message', (m: FromThread) => {
      if (worker !== w) return;
      if ('position' in m) {
        // Progress past where it started: the next loss is not the same failure again.
        if (m.position > readyAt) restartMs = RESTART_MS;
        advance(m.position);
      } else if ('ready' in m) {
        ready = true;
        readyAt = m.ready;
        down = null;
        started?.resolve();
        started = null;
        w.unref();
        advance(m.ready);
        tell();
      } else if ('log' in m) logger?.[m.log]({ err: revive(m.err) }, m.msg);
      else if ('failed' in m) lost(w, 'failed', revive(m.failed));
    });
    w.on('error', (err) => lost(w, 'crashed', err));
    w.on('exit', (code) => lost(w, `exited (code ${code})`));
    // Like the projector's own subscription, a running thread keeps no process alive (start() and
    // stop() hold it while they wait). After the listeners: adding one refs the thread again.
    if (!started) w.unref();
  };

  return {
    store,
    get position() {
      return position;
    },
    async start() {
      await new Promise<void>((resolve, reject) => {
        started = { resolve, reject };
        spawn();
      });
    },
    async caughtUp(timeoutMs = 10_000) {
      if (down) throw down;
      const target = await events.headPosition();
      await waiters.wait(target, timeoutMs);
    },
    async kill() {
      const w = worker;
      if (!w) return;
      await w.terminate();
      lost(w, 'was ended');
    },
    async stop() {
      stopping = true;
      offAppended();
      if (restartTimer) clearTimeout(restartTimer);
      const w = worker;
      if (w) {
        // The thread writes what it has folded and closes its connections, then ends.
        w.ref();
        w.postMessage({ stop: true } satisfies ToThread);
        const timer = setTimeout(() => void w.terminate(), STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(timer);
      }
      worker = null;
      store.close();
    },
  };
}

// The thread: the projector on its own connections, reporting what it writes.
if (!isMainThread && (workerData as { task?: string } | null)?.task === WORKER_TASK) {
  const { eventsFile, analyticsFile } = workerData as ThreadData;
  const port = parentPort!;
  const post = (m: FromThread) => port.postMessage(m);
  const log =
    (level: 'warn' | 'error') =>
    (obj: { err?: unknown }, msg?: string) =>
      post({ log: level, msg: msg ?? '', err: serialise(obj.err) });
  const events = new SqliteEventStore(eventsFile);
  const store = new AnalyticsStore(analyticsFile);
  let loaded = false;
  const projector = analyticsProjector(events, store, { warn: log('warn'), error: log('error') } as unknown as Pick<Logger, 'warn' | 'error'>, {
    onAdvance: (p) => {
      if (loaded) post({ position: p });
    },
    onFail: (err) => post({ failed: serialise(err) }),
  });
  let stopping = false;
  port.on('message', (m: ToThread) => {
    if ('head' in m) events.noticeAppends();
    else if ('stop' in m && !stopping) {
      stopping = true;
      void (async () => {
        // What was stored before the stop is folded and written first (its write may be waiting on
        // WRITE_EVERY_MS, and the last appends may not have been told yet): a clean stop leaves the
        // models at the head. Not past half the time the platform thread gives it.
        events.noticeAppends();
        await projector.caughtUp(STOP_TIMEOUT_MS / 2).catch(() => {});
        await projector.stop();
        await events.close();
        // Its last position is posted; with the port closed the thread ends.
        port.close();
      })();
    }
  });
  projector.start().then(
    () => {
      loaded = true;
      post({ ready: store.checkpoint() });
    },
    (err: unknown) => post({ failed: serialise(err) }),
  );
}
