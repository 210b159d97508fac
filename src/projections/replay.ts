/**
 * `telephony replay` (CONTRACT section 12): rebuilds every read model from the log into fresh
 * storage, and only once that is complete replaces the old models with it. A replay that fails or is
 * interrupted leaves the old models in place (the staged files are discarded at the next replay).
 *
 * Speed comes from folding in memory: documents stay in a map (spilled to the staged store past a
 * bound, for logs bigger than memory) and are written once at the end, instead of a read and a write
 * per batch as the live runner does.
 */
import { existsSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import type { Doc, DocWrite } from '../gateways/read-store/port.js';
import { SqliteReadStore } from '../gateways/read-store/sqlite.js';
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
  const events = openEventStore(config, Date.now);
  const live = openReadStore(config, Date.now);
  if (!(live instanceof SqliteReadStore)) {
    await live.close();
    await events.close();
    throw new Error('replay rebuilds the embedded read store only');
  }
  const readFile = path.join(config.dataDir, 'read.db');
  const analyticsFile = path.join(config.dataDir, 'analytics.db');
  const stagedRead = `${readFile}.replay`;
  const stagedAnalytics = `${analyticsFile}.replay`;
  removeDb(stagedRead);
  removeDb(stagedAnalytics);
  const staged = new SqliteReadStore(stagedRead);
  const analyticsStore = new AnalyticsStore(stagedAnalytics);
  let swapped = false;
  try {
    const total = await events.headPosition();
    const model = new AnalyticsModel(analyticsStore);
    const maxDocs = options.maxDocs ?? 500_000;
    const pageSize = options.pageSize ?? 5_000;
    const docs = new Map<string, { collection: string; id: string; doc: Doc | null }>();
    let spilled = false;
    const spill = async () => {
      const writes: DocWrite[] = [];
      for (const d of docs.values()) writes.push(d);
      await staged.commit(writes, {});
      docs.clear();
      spilled = true;
    };
    const prepared = projections.map((p) => ({ p, collection: collectionOf(p) }));
    let count = 0;
    let after = 0;
    while (after < total) {
      const page = await events.readAll({ after, maxCount: Math.min(pageSize, total - after) });
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
      if (model.unwritten >= 200_000) model.flush();
      options.onProgress?.({ events: count, total });
    }
    const checkpoints = Object.fromEntries(projections.map((p) => [p.name, total]));
    const writes: DocWrite[] = [];
    for (const d of docs.values()) writes.push(d);
    await staged.commit(writes, checkpoints);
    // The checkpoint moves to the head even when the last events changed nothing of the analytics.
    model.flush();
    analyticsStore.db.prepare("INSERT OR REPLACE INTO meta (name, value) VALUES ('checkpoint', ?)").run(String(total));
    // A self-contained file: no WAL beside it, so it can be renamed into place.
    analyticsStore.db.pragma('wal_checkpoint(TRUNCATE)');
    analyticsStore.db.pragma('journal_mode = DELETE');
    analyticsStore.close();
    await staged.close();
    await options.beforeSwap?.();

    // The swap: read models in one transaction, then the analytics file by rename.
    live.replaceFrom(
      stagedRead,
      [...new Set(projections.map(collectionOf))],
      projections.map((p) => p.name),
    );
    // The old file's WAL must not be applied to the new file; without it the old file is still a
    // consistent (older) store, so a crash between these steps loses nothing the log cannot rebuild.
    rmSync(`${analyticsFile}-wal`, { force: true });
    rmSync(`${analyticsFile}-shm`, { force: true });
    renameSync(stagedAnalytics, analyticsFile);
    swapped = true;
    return { events: count, seconds: (performance.now() - started) / 1000 };
  } finally {
    analyticsStore.close();
    await staged.close();
    await live.close();
    await events.close();
    removeDb(stagedRead);
    if (!swapped && existsSync(stagedAnalytics)) removeDb(stagedAnalytics);
  }
}
