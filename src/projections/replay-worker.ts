/**
 * Replay's threads: each folds a share of the read models from the embedded log into staged files
 * of its own. One folds the documents straight into the staged read store, and the analytics
 * timeline (dashboard snapshots) into a staged store of its own; the other folds the analytics
 * figures (export rows, agent days, service hours) into the staged analytics store, which the main
 * thread completes with the timeline once both are done. Each thread reads the log itself and
 * decodes only the events it reads, so they share nothing but the file. The main thread only
 * waits: a worker's heap can be given a young generation large enough for the fold's garbage, the
 * main thread's cannot.
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { SqliteEventStore } from '../gateways/event-store/sqlite.js';
import { SqliteReadStore } from '../gateways/read-store/sqlite.js';
import { AnalyticsModel, type AnalyticsPart } from '../analytics/model.js';
import { AnalyticsStore } from '../analytics/store.js';
import { projections as allProjections } from './index.js';
import { DocumentFold } from './fold.js';

export interface ReplayTask {
  task: 'replay-worker';
  /** The event log (only read here). */
  eventsFile: string;
  /** The staged read store this thread writes its documents into (created), if it folds any. */
  docsFile: string | null;
  /** Names of the projections folded here. */
  projections: string[];
  /** Projections whose checkpoints this thread sets at the head in `docsFile`. */
  checkpoints: string[];
  /** The staged analytics store and what of the analytics models this thread folds into it, if any. */
  analytics: { file: string; part: AnalyticsPart } | null;
  /** Fold events at positions 1..total. */
  total: number;
  maxDocs: number;
  /** Events between two looks at the documents held (and two progress messages). */
  pageSize: number;
  /** Test hook: the thread dies after folding this many events, by an exception or by exiting. */
  dieAfter?: { events: number; how: 'throw' | 'exit' };
}

/**
 * What a replay worker posts: the position it reached, and the events it read once its staged files
 * are complete (a thread that reads only some types counts fewer than the log holds).
 */
export type ReplayMessage = { progress: number } | { done: number };

/** Events applied between two writes of the analytics fold. */
export const FLUSH_EVERY = 50_000;

/** Ends a staged analytics store: the checkpoint at the head, a plain rollback-journal file, closed. */
export function finishAnalytics(model: AnalyticsModel, store: AnalyticsStore, total: number): void {
  // The checkpoint moves to the head even when the last events changed nothing of the analytics.
  model.flush();
  store.db.prepare("INSERT OR REPLACE INTO meta (name, value) VALUES ('checkpoint', ?)").run(String(total));
  store.db.pragma('journal_mode = DELETE');
  store.close();
}

/** The worker's fold; returns the events read. */
export async function foldShare(task: ReplayTask, progress: (events: number) => void = () => {}): Promise<number> {
  const events = new SqliteEventStore(task.eventsFile);
  const analytics = task.analytics && new AnalyticsStore(task.analytics.file);
  const docs = task.docsFile === null ? null : new SqliteReadStore(task.docsFile);
  try {
    analytics?.bulkLoadMode();
    docs?.bulkLoadMode();
    const model = analytics && new AnalyticsModel(analytics, task.analytics!.part);
    const fold = docs && new DocumentFold(allProjections.filter((p) => task.projections.includes(p.name)), docs);
    // The timeline's agents are the fold's (both fold every event from the start, the fold first).
    if (model && fold?.collections.includes('agents')) model.besideFold(fold.current);
    let count = 0;
    // Only the events something here reads are decoded; where nothing here needs every event, only
    // those are read at all.
    const docTypes = fold ? fold.types : [];
    const modelReads = model ? model.reads : { only: [], data: [] };
    const union = (a: string[], b: string[]) => [...new Set([...a, ...b])];
    const types = docTypes && { only: modelReads.only && union(docTypes, modelReads.only), data: union(docTypes, modelReads.data) };
    for (const e of events.scanRange(0, task.total, types ?? undefined)) {
      fold?.apply(e);
      model?.apply(e);
      if (++count % task.pageSize === 0) {
        await fold?.bound(task.maxDocs);
        if (model && model.unwritten >= FLUSH_EVERY) model.flush();
        progress(e.position);
      }
      if (task.dieAfter && count >= task.dieAfter.events) {
        if (task.dieAfter.how === 'exit') process.exit(3);
        throw new Error(`replay worker: injected failure after ${count} events`);
      }
    }
    await fold?.finish(Object.fromEntries(task.checkpoints.map((name) => [name, task.total])));
    docs?.finishBulkLoad();
    if (model) finishAnalytics(model, analytics!, task.total);
    return count;
  } finally {
    analytics?.close();
    await docs?.close();
    await events.close();
  }
}

if (!isMainThread && (workerData as ReplayTask | undefined)?.task === 'replay-worker') {
  const post = (m: ReplayMessage) => parentPort!.postMessage(m);
  post({ done: await foldShare(workerData as ReplayTask, (events) => post({ progress: events })) });
}
