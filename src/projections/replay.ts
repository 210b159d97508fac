/**
 * `telephony replay` (CONTRACT section 12): rebuilds every read model from the log into fresh
 * storage, and only once that is complete replaces the old models with it. A replay that fails or is
 * interrupted leaves the old models in place (the staged files are discarded at the next replay).
 *
 * Speed comes from folding in memory: documents stay in maps (spilled to the staged store past a
 * bound, for logs bigger than memory) and are written once at the end, instead of a read and a write
 * per batch as the live runner does. On the embedded log the work is shared by two worker threads
 * (replay-worker.ts): one folds every analytics model and most read models, the other the read
 * models with a document per call (CALLS_THREAD_PROJECTIONS); this thread reads the log once and
 * hands each page of it to both, then swaps in what they wrote. A worker that fails or dies fails
 * the replay at once, before anything is swapped.
 */
import { closeSync, existsSync, fsyncSync, openSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Config } from '../config.js';
import { SqliteReadStore } from '../gateways/read-store/sqlite.js';
import { SqliteEventStore } from '../gateways/event-store/sqlite.js';
import type { RecordedEvent } from '../gateways/event-store/port.js';
import { openEventStore, openReadStore } from '../gateways/stores.js';
import { AnalyticsStore } from '../analytics/store.js';
import { AnalyticsModel } from '../analytics/model.js';
import { projections as allProjections } from './index.js';
import { collectionOf, type Projection } from './projection.js';
import { DocumentFold } from './fold.js';
import { FLUSH_EVERY, finishAnalytics, type ReplayInput, type ReplayMessage, type ReplayTask } from './replay-worker.js';

export interface ReplayProgress {
  events: number;
  /** Events in the log when the replay started. */
  total: number;
}

export interface ReplayOptions {
  onProgress?(p: ReplayProgress): void;
  /** Documents kept in memory before they are spilled to the staged store. */
  maxDocs?: number;
  /** Events between two looks at the documents held (and progress reports); a page of a non-embedded log. */
  pageSize?: number;
  projections?: Projection<any>[];
  /**
   * Fold in two worker threads (default: yes, for the embedded log and the platform's projections,
   * when running the built code; a worker cannot load the TypeScript sources).
   */
  threads?: boolean;
  /** Test hook: called after the fresh models are complete, before they replace the old. */
  beforeSwap?(): void | Promise<void>;
  /** Test hook: the calls' worker dies after folding this many events. */
  workerDiesAfter?: ReplayTask['dieAfter'];
}

export interface ReplayResult {
  events: number;
  seconds: number;
  /** 2 when a worker thread took a share of the fold. */
  threads: 1 | 2;
}

/**
 * Projections folded by the second thread: the read models of calls (and SMS), light to fold, with
 * most of the documents to write (one per call in three of them). It folds faster than the first
 * thread (the analytics models and the rest: ~3.9 CPU s against ~2.1 on the bench's log), runs ahead
 * of it (PAGES_AHEAD) and writes its documents (~1.1 s) while the first still folds, which then
 * writes its few.
 */
export const CALLS_THREAD_PROJECTIONS = ['call-outcomes', 'customers', 'calls', 'call-stats', 'metering', 'active-calls', 'in-ivr', 'queued-callers', 'sms'];

interface ReplayWorker {
  /** The events it folded, once its staged files are complete; rejects when it fails or dies. */
  done: Promise<number>;
  /** The position it reached. */
  progress: number;
  /** Pages it has folded. */
  consumed: number;
  /** Resolves once it has folded the whole log and waits for its turn to write its documents. */
  folded: Promise<void>;
  /** Resolves when it has folded one more page. */
  advanced(): Promise<void>;
  send(m: ReplayInput, transfer?: ArrayBuffer[]): void;
  stop(): Promise<unknown>;
}

/**
 * Pages of the log posted to a worker beyond those it has folded (each ~1 MB on the bench's log, of
 * 245): enough that the faster worker ends its fold long enough before the slower one that its writes
 * overlap the other's fold (the main thread reads the log at the pace of the slower).
 */
const PAGES_AHEAD = 96;
/** Events in a page of the log read for the workers, at most. */
const READ_PAGE = 4096;

const workerUrl = new URL('./replay-worker.js', import.meta.url);
const canRunWorkers = () => import.meta.url.endsWith('.js') && existsSync(workerUrl);

/** `task` in a worker thread. */
function startWorker(task: ReplayTask, onProgress: () => void): ReplayWorker {
  // A larger young generation than the default: nearly everything the fold allocates dies young, and
  // each scavenge costs what survives it. Not much larger: at 192 MiB the fold ran slower (paired
  // runs on the shared VM: ~13.5 CPU s against ~11.3 at 16 to 48 MiB), its garbage no longer in cache.
  const worker = new Worker(workerUrl, { workerData: task, resourceLimits: { maxYoungGenerationSizeMb: 48 } });
  let advance = () => {};
  let folded = () => {};
  const w: ReplayWorker = {
    done: Promise.resolve(0),
    progress: 0,
    consumed: 0,
    folded: new Promise<void>((resolve) => (folded = resolve)),
    advanced: () => new Promise<void>((resolve) => (advance = resolve)),
    send: (m, transfer) => worker.postMessage(m, transfer),
    stop: () => worker.terminate(),
  };
  w.done = new Promise<number>((resolve, reject) => {
    let count: number | undefined;
    worker.on('message', (m: ReplayMessage) => {
      if ('done' in m) count = m.done;
      else if ('consumed' in m) {
        w.consumed = m.consumed;
        advance();
      } else if ('folded' in m) folded();
      else {
        w.progress = m.progress;
        onProgress();
      }
    });
    worker.once('error', reject);
    worker.once('exit', (code) => (count !== undefined ? resolve(count) : reject(new Error(`a replay worker stopped (exit code ${code})`))));
  });
  w.done.catch(() => {}); // awaited with the other worker's; a failure must not go unhandled meanwhile
  return w;
}

const removeDb = (file: string) => {
  for (const f of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]) rmSync(f, { force: true });
};

/** Rebuilds the read models and the analytics models of the stores `config` names. The server must be stopped. */
export async function replay(config: Config, options: ReplayOptions = {}): Promise<ReplayResult> {
  const started = performance.now();
  const projections = options.projections ?? allProjections;
  const events = await openEventStore(config, Date.now);
  const live = await openReadStore(config, Date.now);
  if (!(live instanceof SqliteReadStore)) {
    await live.close();
    await events.close();
    throw new Error('replay rebuilds the embedded read store only: with MONGODB_URL set it is not supported yet');
  }
  const readFile = path.join(config.dataDir, 'read.db');
  const analyticsFile = path.join(config.dataDir, 'analytics.db');
  const stagedRead = `${readFile}.replay`;
  const stagedAnalytics = `${analyticsFile}.replay`;
  // The workers' own staged read stores (documents spilled).
  const stagedShares = [0, 1].map((i) => `${readFile}.replay-share-${i}`);
  for (const f of [stagedRead, stagedAnalytics, ...stagedShares]) removeDb(f);
  let staged: SqliteReadStore | null = null;
  let analyticsStore: AnalyticsStore | null = null;
  const workers: ReplayWorker[] = [];
  let swapped = false;
  try {
    const total = await events.headPosition();
    const maxDocs = options.maxDocs ?? 500_000;
    const pageSize = options.pageSize ?? 5_000;
    const names = projections.map((p) => p.name);
    const threads =
      options.threads !== false && events instanceof SqliteEventStore && canRunWorkers() && names.every((n) => allProjections.some((p) => p.name === n));
    let count: number;
    if (threads) {
      const shared = names.filter((n) => CALLS_THREAD_PROJECTIONS.includes(n));
      const task = { task: 'replay-worker', total, maxDocs, pageSize, checkpoints: names, docsInto: stagedRead } as const;
      const tasks: ReplayTask[] = [
        { ...task, docsFile: stagedShares[0]!, projections: names.filter((n) => !shared.includes(n)), analytics: { file: stagedAnalytics } },
        {
          ...task,
          docsFile: stagedShares[1]!,
          projections: shared,
          checkpoints: [],
          analytics: null,
          ...(options.workerDiesAfter ? { dieAfter: options.workerDiesAfter } : {}),
        },
      ];
      const report = () => options.onProgress?.({ events: Math.min(...workers.map((w) => w.progress)), total });
      for (const t of tasks) workers.push(startWorker(t, report));
      // This thread reads the log once, with every event's data, and posts every page to both. Each
      // worker decodes only the data it reads; between them they read the data of nearly every type,
      // and leaving out the rest inside SQLite cost more (~0.1 CPU s of the bench's read) than it saved.
      // Either worker failing fails the replay now (the other is stopped in `finally`); neither ends before the log does.
      const failed = Promise.race(workers.map((w) => w.done.then(() => Promise.reject(new Error('a replay worker ended before the log did')))));
      failed.catch(() => {});
      let sent = 0;
      for (const page of events.scanPages(0, total, null, Math.min(pageSize, READ_PAGE))) {
        for (const w of workers) while (sent - w.consumed >= PAGES_AHEAD) await Promise.race([w.advanced(), failed]);
        // Transferred, not cloned: the first worker gets a copy of its own (never a slice of Node's
        // buffer pool, which cannot be transferred).
        workers.forEach((w, i) => {
          const own = i === workers.length - 1 ? page : new Uint8Array(page);
          w.send({ page: own }, [own.buffer as ArrayBuffer]);
        });
        sent++;
      }
      for (const w of workers) w.send({ end: true });
      // Each writes its documents into the staged read store once it has folded the log, one after
      // the other (SQLite has one writer), the first done first: no copy after both.
      let writing: Promise<unknown> = Promise.resolve();
      for (const w of workers) {
        void w.folded.then(() => {
          writing = writing.then(() => {
            w.send({ write: true });
            return w.done;
          });
          writing.catch(() => {}); // a failed worker fails the replay below
        });
      }
      // The first reads every event (its timeline counts them).
      const counts = await Promise.all(workers.map((w) => w.done));
      count = counts[0]!;
      options.onProgress?.({ events: count, total });
      staged = new SqliteReadStore(stagedRead);
      staged.bulkLoadMode();
    } else {
      // One pass in this thread.
      staged = new SqliteReadStore(stagedRead);
      staged.bulkLoadMode();
      analyticsStore = new AnalyticsStore(stagedAnalytics);
      analyticsStore.bulkLoadMode();
      const model = new AnalyticsModel(analyticsStore);
      const fold = new DocumentFold(projections, staged);
      count = 0;
      const apply = (e: RecordedEvent) => {
        fold.apply(e);
        model.apply(e);
        count++;
      };
      const pause = async () => {
        await fold.bound(maxDocs);
        if (model.unwritten >= FLUSH_EVERY) model.flush();
        options.onProgress?.({ events: count, total });
      };
      if (events instanceof SqliteEventStore) {
        for (const e of events.scanRange(0, total)) {
          apply(e);
          if (count % pageSize === 0) await pause();
        }
      } else {
        let after = 0;
        while (after < total) {
          const page = await events.readAll({ after, maxCount: Math.min(pageSize, total - after) });
          if (page.length === 0) break;
          for (const e of page) if (e.position <= total) apply(e);
          after = page[page.length - 1]!.position;
          await pause();
        }
      }
      options.onProgress?.({ events: count, total });
      await fold.finish(Object.fromEntries(names.map((n) => [n, total])));
      finishAnalytics(model, analyticsStore, total);
    }
    const collections = [...new Set(projections.map(collectionOf))];
    staged.adoptAuxiliaryFrom(readFile, collections, projections.map((p) => p.name));
    staged.finishBulkLoad();
    await staged.close();
    // Written without syncs: made durable once, before they are renamed into place.
    for (const f of [stagedRead, stagedAnalytics]) {
      const fd = openSync(f, 'r+');
      fsyncSync(fd);
      closeSync(fd);
    }
    await options.beforeSwap?.();

    // The swap. Closing the live store checkpoints its WAL into its file and removes it, so no old
    // WAL can be applied to the new file; a crash between the renames leaves one store new and the
    // other old, each consistent with its own checkpoint (the old one catches up from the log).
    await live.close();
    for (const [stagedFile, file] of [[stagedRead, readFile], [stagedAnalytics, analyticsFile]] as const) {
      rmSync(`${file}-wal`, { force: true });
      rmSync(`${file}-shm`, { force: true });
      renameSync(stagedFile, file);
    }
    swapped = true;
    return { events: count, seconds: (performance.now() - started) / 1000, threads: threads ? 2 : 1 };
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    analyticsStore?.close();
    for (const f of stagedShares) removeDb(f);
    await staged?.close();
    await live.close();
    await events.close();
    if (!swapped) {
      if (existsSync(stagedRead)) removeDb(stagedRead);
      if (existsSync(stagedAnalytics)) removeDb(stagedAnalytics);
    }
  }
}
