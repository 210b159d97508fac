/**
 * `telephony replay` (CONTRACT section 12): rebuilds every read model from the log into fresh
 * storage, and only once that is complete replaces the old models with it. A replay that fails or is
 * interrupted leaves the old models in place (the staged files are discarded at the next replay).
 *
 * Speed comes from folding in memory: documents stay in maps (spilled to the staged store past a
 * bound, for logs bigger than memory) and are written once at the end, instead of a read and a write
 * per batch as the live runner does. On the embedded log the work is shared by two threads: a worker
 * folds the analytics models and a share of the projections (replay-worker.ts), this thread the rest.
 */
import { closeSync, existsSync, fsyncSync, openSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Config } from '../config.js';
import { SqliteReadStore } from '../gateways/read-store/sqlite.js';
import { SqliteEventStore } from '../gateways/event-store/sqlite.js';
import type { RecordedEvent } from '../gateways/event-store/port.js';
import { openEventStore, openReadStore } from '../platform.js';
import { AnalyticsStore } from '../analytics/store.js';
import { AnalyticsModel } from '../analytics/model.js';
import { projections as allProjections } from './index.js';
import { collectionOf, type Projection } from './projection.js';
import { DocumentFold } from './fold.js';
import { FLUSH_EVERY, finishAnalytics, type ReplayTask } from './replay-worker.js';

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
   * Fold the analytics models in a worker thread beside the documents (default: yes, for the embedded
   * log, when running the built code; a worker cannot load the TypeScript sources).
   */
  threads?: boolean;
  /** Test hook: called after the fresh models are complete, before they replace the old. */
  beforeSwap?(): void | Promise<void>;
}

export interface ReplayResult {
  events: number;
  seconds: number;
  /** 2 when a worker thread took a share of the fold. */
  threads: 1 | 2;
}

/**
 * Projections the worker folds beside the analytics models, to balance the threads: on the bench's
 * log of calls the analytics fold weighs about as much as all the projections but this one.
 */
export const WORKER_PROJECTIONS = ['call-outcomes'];

/** `task` in a worker thread, or null where one cannot run. */
function startWorker(task: ReplayTask): { done: Promise<number>; stop(): Promise<unknown> } | null {
  const url = new URL('./replay-worker.js', import.meta.url);
  if (!import.meta.url.endsWith('.js') || !existsSync(url)) return null;
  // A larger young generation: nearly everything the fold allocates dies young.
  const worker = new Worker(url, { workerData: task, resourceLimits: { maxYoungGenerationSizeMb: 64 } });
  const done = new Promise<number>((resolve, reject) => {
    let count: number | undefined;
    worker.on('message', (m: { done?: number }) => {
      if (m.done !== undefined) count = m.done;
    });
    worker.once('error', reject);
    worker.once('exit', (code) => (count !== undefined ? resolve(count) : reject(new Error(`the replay worker stopped (exit code ${code})`))));
  });
  done.catch(() => {}); // awaited later; a failure must not go unhandled meanwhile
  return { done, stop: () => worker.terminate() };
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
  const stagedDocs = `${readFile}.replay-2`;
  for (const f of [stagedRead, stagedAnalytics, stagedDocs]) removeDb(f);
  const staged = new SqliteReadStore(stagedRead);
  staged.bulkLoadMode();
  let analyticsStore: AnalyticsStore | null = null;
  let worker: ReturnType<typeof startWorker> = null;
  let swapped = false;
  try {
    const total = await events.headPosition();
    const maxDocs = options.maxDocs ?? 500_000;
    const pageSize = options.pageSize ?? 5_000;
    const shared = projections.filter((p) => WORKER_PROJECTIONS.includes(p.name));
    if (options.threads !== false && events instanceof SqliteEventStore) {
      worker = startWorker({
        task: 'replay-worker',
        eventsFile: events.file,
        analyticsFile: stagedAnalytics,
        docsFile: stagedDocs,
        projections: shared.map((p) => p.name),
        total,
        maxDocs,
        pageSize,
      });
    }
    // Without a worker, everything is folded here in one pass.
    let model: AnalyticsModel | null = null;
    if (!worker) {
      analyticsStore = new AnalyticsStore(stagedAnalytics);
      analyticsStore.bulkLoadMode();
      model = new AnalyticsModel(analyticsStore);
    }
    const fold = new DocumentFold(worker ? projections.filter((p) => !shared.includes(p)) : projections, staged);
    let count = 0;
    const apply = (e: RecordedEvent) => {
      fold.apply(e);
      model?.apply(e);
      count++;
    };
    const pause = async () => {
      await fold.bound(maxDocs);
      if (model && model.unwritten >= FLUSH_EVERY) model.flush();
      options.onProgress?.({ events: count, total });
    };
    if (events instanceof SqliteEventStore) {
      // With the analytics in the worker, this thread decodes only what its projections read.
      for (const e of events.scanRange(0, total, model ? undefined : fold.wants)) {
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
    await fold.finish(Object.fromEntries(projections.map((p) => [p.name, total])));
    if (model) finishAnalytics(model, analyticsStore!, total);
    else {
      await worker!.done;
      staged.copyDocsFrom(stagedDocs);
      removeDb(stagedDocs);
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
    return { events: count, seconds: (performance.now() - started) / 1000, threads: worker ? 2 : 1 };
  } finally {
    await worker?.stop();
    analyticsStore?.close();
    removeDb(stagedDocs);
    await staged.close();
    await live.close();
    await events.close();
    if (!swapped) {
      if (existsSync(stagedRead)) removeDb(stagedRead);
      if (existsSync(stagedAnalytics)) removeDb(stagedAnalytics);
    }
  }
}
