/**
 * `telephony replay` (CONTRACT section 12): rebuilds every read model from the log into fresh
 * storage, and only once that is complete replaces the old models with it. A replay that fails or is
 * interrupted leaves the old models in place (the staged files are discarded at the next replay).
 *
 * Speed comes from folding in memory: documents stay in a map (spilled to the staged store past a
 * bound, for logs bigger than memory) and are written once at the end, instead of a read and a write
 * per batch as the live runner does.
 */
import { closeSync, existsSync, fsyncSync, openSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import type { Doc, DocWrite } from '../gateways/read-store/port.js';
import { SqliteReadStore } from '../gateways/read-store/sqlite.js';
import { SqliteEventStore } from '../gateways/event-store/sqlite.js';
import type { RecordedEvent } from '../gateways/event-store/port.js';
import { openEventStore, openReadStore } from '../platform.js';
import { Worker } from 'node:worker_threads';
import { AnalyticsStore } from '../analytics/store.js';
import { AnalyticsModel } from '../analytics/model.js';
import { FLUSH_EVERY, finishAnalytics, type RebuildTask } from '../analytics/rebuild.js';
import { projections as allProjections } from './index.js';
import { collectionOf, type Projection } from './projection.js';

export interface ReplayProgress {
  events: number;
  /** Events in the log when the replay started. */
  total: number;
}

export interface ReplayOptions {
  onProgress?(p: ReplayProgress): void;
  /** Documents kept in memory before they are spilled to the staged store. */
  maxDocs?: number;
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
}

/** The analytics fold of `task` in a worker thread, or null where one cannot run. */
function analyticsWorker(task: RebuildTask): { done: Promise<number>; stop(): Promise<unknown> } | null {
  const url = new URL('../analytics/rebuild.js', import.meta.url);
  if (!import.meta.url.endsWith('.js') || !existsSync(url)) return null;
  // A larger young generation: nearly everything the fold allocates dies young.
  const worker = new Worker(url, { workerData: task, resourceLimits: { maxYoungGenerationSizeMb: 64 } });
  const done = new Promise<number>((resolve, reject) => {
    let count: number | undefined;
    worker.on('message', (m: { done?: number }) => {
      if (m.done !== undefined) count = m.done;
    });
    worker.once('error', reject);
    worker.once('exit', (code) => (count !== undefined ? resolve(count) : reject(new Error(`the analytics replay stopped (exit code ${code})`))));
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
  removeDb(stagedRead);
  removeDb(stagedAnalytics);
  const staged = new SqliteReadStore(stagedRead);
  staged.bulkLoadMode();
  let analyticsStore: AnalyticsStore | null = null;
  let worker: ReturnType<typeof analyticsWorker> = null;
  let swapped = false;
  try {
    const total = await events.headPosition();
    if (options.threads !== false && events instanceof SqliteEventStore) {
      worker = analyticsWorker({ task: 'rebuild-analytics', eventsFile: events.file, analyticsFile: stagedAnalytics, total });
    }
    // Without a worker, the analytics fold rides along the document fold here.
    let model: AnalyticsModel | null = null;
    if (!worker) {
      analyticsStore = new AnalyticsStore(stagedAnalytics);
      analyticsStore.bulkLoadMode();
      model = new AnalyticsModel(analyticsStore);
    }
    const maxDocs = options.maxDocs ?? 500_000;
    const pageSize = options.pageSize ?? 5_000;
    // One map per collection, by id (null: deleted); the folds that touch it for each event type.
    const collections = [...new Set(projections.map(collectionOf))];
    const docs = new Map<string, Map<string, Doc | null>>(collections.map((c) => [c, new Map()]));
    const folds = projections.map((p) => ({ p, collection: collectionOf(p), docs: docs.get(collectionOf(p))! }));
    const foldsByType = new Map<string, typeof folds>();
    const foldsOf = (type: string) => {
      let f = foldsByType.get(type);
      if (!f) foldsByType.set(type, (f = folds.filter(({ p }) => !p.handles || p.handles(type))));
      return f;
    };
    let held = 0;
    let spilled = false;
    const allWrites = () => {
      const writes: DocWrite[] = [];
      for (const [collection, byId] of docs) for (const [id, doc] of byId) writes.push({ collection, id, doc });
      return writes;
    };
    const spill = async () => {
      await staged.commit(allWrites(), {});
      for (const byId of docs.values()) byId.clear();
      held = 0;
      spilled = true;
    };
    let count = 0;
    const fold = (e: RecordedEvent) => {
      const touching = foldsOf(e.type);
      for (let f = 0; f < touching.length; f++) {
        const { p, collection, docs: byId } = touching[f]!;
        const ids = p.keys(e);
        for (let i = 0; i < ids.length; i++) {
          const id = ids[i]!;
          let doc = byId.get(id);
          if (doc === undefined) {
            doc = spilled ? staged.getNow(collection, id) : null;
            held++;
          }
          byId.set(id, p.evolve(doc, e, id));
        }
      }
      model?.apply(e);
      count++;
    };
    const pause = async () => {
      if (held > maxDocs) await spill();
      if (model && model.unwritten >= FLUSH_EVERY) model.flush();
      options.onProgress?.({ events: count, total });
    };
    if (events instanceof SqliteEventStore) {
      for (const e of events.scanRange(0, total)) {
        fold(e);
        if (count % pageSize === 0) await pause();
      }
    } else {
      let after = 0;
      while (after < total) {
        const page = await events.readAll({ after, maxCount: Math.min(pageSize, total - after) });
        if (page.length === 0) break;
        for (const e of page) if (e.position <= total) fold(e);
        after = page[page.length - 1]!.position;
        await pause();
      }
    }
    options.onProgress?.({ events: count, total });
    const checkpoints = Object.fromEntries(projections.map((p) => [p.name, total]));
    if (spilled) await staged.commit(allWrites(), checkpoints);
    else {
      // Nothing stored yet: every live document inserted once, in key order (appends to the B-tree).
      for (const [collection, byId] of docs) {
        const ids = [...byId.keys()].sort();
        staged.insertFresh(
          collection,
          (function* () {
            for (const id of ids) {
              const doc = byId.get(id);
              if (doc) yield [id, doc] as [string, Doc];
            }
          })(),
        );
        byId.clear();
      }
      await staged.commit([], checkpoints);
    }
    staged.adoptAuxiliaryFrom(readFile, collections, projections.map((p) => p.name));
    staged.finishBulkLoad();
    await staged.close();
    if (model) finishAnalytics(model, analyticsStore!, total);
    else await worker!.done;
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
    return { events: count, seconds: (performance.now() - started) / 1000 };
  } finally {
    await worker?.stop();
    analyticsStore?.close();
    await staged.close();
    await live.close();
    await events.close();
    if (!swapped) {
      if (existsSync(stagedRead)) removeDb(stagedRead);
      if (existsSync(stagedAnalytics)) removeDb(stagedAnalytics);
    }
  }
}
