/**
 * Replay's half for the analytics read models: folds the embedded log into a fresh analytics store.
 * Replay runs it in a worker thread of its own when it can (the built code), beside the document
 * fold on the main thread: each reads the log itself, so the two folds share nothing but the file.
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { SqliteEventStore } from '../gateways/event-store/sqlite.js';
import { AnalyticsModel } from './model.js';
import { AnalyticsStore } from './store.js';

export interface RebuildTask {
  task: 'rebuild-analytics';
  /** The event log (read only here) and the staged analytics file to create. */
  eventsFile: string;
  analyticsFile: string;
  /** Fold events at positions 1..total. */
  total: number;
}

/** Events applied between two writes of the fold. */
export const FLUSH_EVERY = 50_000;

/** Ends a staged analytics store: the checkpoint at the head, a plain rollback-journal file, closed. */
export function finishAnalytics(model: AnalyticsModel, store: AnalyticsStore, total: number): void {
  // The checkpoint moves to the head even when the last events changed nothing of the analytics.
  model.flush();
  store.db.prepare("INSERT OR REPLACE INTO meta (name, value) VALUES ('checkpoint', ?)").run(String(total));
  store.db.pragma('journal_mode = DELETE');
  store.close();
}

/** Folds events 1..total of `events` into a new analytics store at `file`; returns the events read. */
export function rebuildAnalytics(events: SqliteEventStore, file: string, total: number, onProgress?: (events: number) => void): number {
  const store = new AnalyticsStore(file);
  try {
    store.bulkLoadMode();
    const model = new AnalyticsModel(store);
    let count = 0;
    for (const e of events.scanRange(0, total)) {
      model.apply(e);
      if (++count % FLUSH_EVERY === 0) {
        model.flush();
        onProgress?.(count);
      }
    }
    finishAnalytics(model, store, total);
    return count;
  } finally {
    store.close();
  }
}

if (!isMainThread && (workerData as RebuildTask | undefined)?.task === 'rebuild-analytics') {
  const task = workerData as RebuildTask;
  const events = new SqliteEventStore(task.eventsFile);
  try {
    const count = rebuildAnalytics(events, task.analyticsFile, task.total, (n) => parentPort!.postMessage({ progress: n }));
    parentPort!.postMessage({ done: count });
  } finally {
    await events.close();
  }
}
