/**
 * Replay's second thread: folds the analytics models and a share of the projections from the
 * embedded log into staged files of its own, beside the main thread's fold. Each thread reads the
 * log itself, so the two share nothing but the file; the main thread copies this one's documents
 * into its staged store when both are done.
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { SqliteEventStore } from '../gateways/event-store/sqlite.js';
import { SqliteReadStore } from '../gateways/read-store/sqlite.js';
import { AnalyticsModel } from '../analytics/model.js';
import { AnalyticsStore } from '../analytics/store.js';
import { projections as allProjections } from './index.js';
import { DocumentFold } from './fold.js';

export interface ReplayTask {
  task: 'replay-worker';
  /** The event log (only read here). */
  eventsFile: string;
  /** Staged files this thread creates: the analytics store, and a read store for its documents. */
  analyticsFile: string;
  docsFile: string;
  /** Names of the projections folded here. */
  projections: string[];
  /** Fold events at positions 1..total. */
  total: number;
  maxDocs: number;
  /** Events between two looks at the documents held. */
  pageSize: number;
}

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
export async function foldShare(task: ReplayTask): Promise<number> {
  const events = new SqliteEventStore(task.eventsFile);
  const analytics = new AnalyticsStore(task.analyticsFile);
  const docs = new SqliteReadStore(task.docsFile);
  try {
    analytics.bulkLoadMode();
    docs.bulkLoadMode();
    const model = new AnalyticsModel(analytics);
    const fold = new DocumentFold(allProjections.filter((p) => task.projections.includes(p.name)), docs);
    let count = 0;
    for (const e of events.scanRange(0, task.total)) {
      fold.apply(e);
      model.apply(e);
      if (++count % task.pageSize === 0) {
        await fold.bound(task.maxDocs);
        if (model.unwritten >= FLUSH_EVERY) model.flush();
      }
    }
    await fold.finish({});
    finishAnalytics(model, analytics, task.total);
    return count;
  } finally {
    analytics.close();
    await docs.close();
    await events.close();
  }
}

if (!isMainThread && (workerData as ReplayTask | undefined)?.task === 'replay-worker') {
  parentPort!.postMessage({ done: await foldShare(workerData as ReplayTask) });
}
