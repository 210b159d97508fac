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
import { openEventStore, openReadStore } from '../platform.js';
import { AnalyticsStore } from '../analytics/store.js';
import { AnalyticsModel } from '../analytics/model.js';
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
  /** Test hook: called after the fresh models are complete, before they replace the old. */
  beforeSwap?(): void | Promise<void>;
}

export interface ReplayResult {
  events: number;
  seconds: number;
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
  const analyticsStore = new AnalyticsStore(stagedAnalytics);
  analyticsStore.bulkLoadMode();
  let swapped = false;
  try {
    const total = await events.headPosition();
    const model = new AnalyticsModel(analyticsStore);
    const maxDocs = options.maxDocs ?? 500_000;
    const pageSize = options.pageSize ?? 5_000;
    const docs = new Map<string, { collection: string; id: string; doc: Doc | null }>();
    let spilled = false;
    // In key order: appends to the B-tree instead of inserts all over it.
    const sortedWrites = () => [...docs.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([, d]) => d as DocWrite);
    const spill = async () => {
      await staged.commit(sortedWrites(), {});
      docs.clear();
      spilled = true;
    };
    const prepared = projections.map((p) => ({ p, collection: collectionOf(p) }));
    let count = 0;
    let after = 0;
    while (after < total) {
      const maxCount = Math.min(pageSize, total - after);
      const page = events instanceof SqliteEventStore ? events.scan(after, maxCount) : await events.readAll({ after, maxCount });
      if (page.length === 0) break;
      for (const e of page) {
        if (e.position > total) break;
        for (const { p, collection } of prepared) {
          const ids = p.keys(e);
          for (let i = 0; i < ids.length; i++) {
            const id = ids[i]!;
            const key = `${collection}\u0000${id}`;
            let entry = docs.get(key);
            if (!entry) {
              entry = { collection, id, doc: spilled ? await staged.get(collection, id) : null };
              docs.set(key, entry);
            }
            entry.doc = p.evolve(entry.doc, e, id);
          }
        }
        model.apply(e);
        count++;
      }
      after = page[page.length - 1]!.position;
      if (docs.size > maxDocs) await spill();
      if (model.unwritten >= 50_000) model.flush();
      options.onProgress?.({ events: count, total });
    }
    const checkpoints = Object.fromEntries(projections.map((p) => [p.name, total]));
    await staged.commit(sortedWrites(), checkpoints);
    const collections = [...new Set(projections.map(collectionOf))];
    staged.adoptAuxiliaryFrom(readFile, collections, projections.map((p) => p.name));
    staged.finishBulkLoad();
    await staged.close();
    // The checkpoint moves to the head even when the last events changed nothing of the analytics.
    model.flush();
    analyticsStore.db.prepare("INSERT OR REPLACE INTO meta (name, value) VALUES ('checkpoint', ?)").run(String(total));
    analyticsStore.db.pragma('journal_mode = DELETE');
    analyticsStore.close();
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
    analyticsStore.close();
    await staged.close();
    await live.close();
    await events.close();
    if (!swapped) {
      if (existsSync(stagedRead)) removeDb(stagedRead);
      if (existsSync(stagedAnalytics)) removeDb(stagedAnalytics);
    }
  }
}
