/**
 * Replay's threads: each folds a share of the models. One folds the analytics models into the staged
 * analytics store and most read models; the other the read models with a document per call. Each
 * writes its documents into the staged read store once it has folded the log, in turns. The main
 * thread reads the log once and hands each page of it to both (a page is one buffer: see
 * sqlite-pages.ts); each decodes only the events and the data it reads. A worker's heap can be given
 * a young generation large enough for the fold's garbage, the main thread's cannot.
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { PageDecoder, type PageFilter } from '../gateways/event-store/sqlite-pages.js';
import type { RecordedEvent } from '../gateways/event-store/port.js';
import { SqliteReadStore } from '../gateways/read-store/sqlite.js';
import { AnalyticsModel, analyticsReads } from '../analytics/model.js';
import { AnalyticsStore } from '../analytics/store.js';
import { projections as allProjections } from './index.js';
import { DocumentFold, foldTypes } from './fold.js';

export interface ReplayTask {
  task: 'replay-worker';
  /** The staged read store of this thread (created), if it folds documents: spilled ones go there. */
  docsFile: string | null;
  /**
   * The staged read store both threads write their documents into, in turns (one writer at a time):
   * each asks for its turn once it has folded the log.
   */
  docsInto: string;
  /** Names of the projections folded here. */
  projections: string[];
  /** Projections whose checkpoints this thread sets at the head in `docsFile`. */
  checkpoints: string[];
  /** The staged analytics store this thread folds the analytics models into, if any. */
  analytics: { file: string } | null;
  /** Fold events at positions 1..total. */
  total: number;
  maxDocs: number;
  /** Events between two looks at the documents held (and two progress messages); the pages posted are no longer. */
  pageSize: number;
  /** Test hook: the thread dies after folding this many events, by an exception or by exiting. */
  dieAfter?: { events: number; how: 'throw' | 'exit' };
}

/**
 * What a replay worker posts: the position it reached, the pages it has folded (the main thread
 * posts the next ones only a few pages ahead), and the events it read once its staged files are
 * complete (a thread that reads only some types counts fewer than the log holds).
 */
export type ReplayMessage = { progress: number } | { consumed: number } | { folded: true } | { done: number };

/** What the main thread posts: each page of the log in order, then the end; then the turn to write documents. */
export type ReplayInput = { page: Uint8Array } | { end: true } | { write: true };

/** What a share reads of the log: the types it sees at all (null: every one), and those whose data it reads (null: all). */
export function shareReads(task: Pick<ReplayTask, 'docsFile' | 'projections' | 'analytics'>): { only: string[] | null; data: string[] | null } {
  const docTypes = task.docsFile === null ? [] : foldTypes(allProjections.filter((p) => task.projections.includes(p.name)));
  if (docTypes === null) return { only: null, data: null };
  const model = task.analytics ? analyticsReads() : { only: [], data: [] };
  const union = (a: string[], b: string[]) => [...new Set([...a, ...b])];
  return { only: model.only && union(docTypes, model.only), data: union(docTypes, model.data) };
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

/** How a worker talks to the main thread. */
export interface ShareIo {
  /** The pages of the log, in order. */
  pages: AsyncIterable<Uint8Array>;
  progress(position: number): void;
  consumed(pages: number): void;
  /** Resolves when this thread may write its documents into the shared staged store. */
  turn(): Promise<void>;
}

/** The worker's fold of the pages of the log, in order; returns the events read. */
export async function foldShare(task: ReplayTask, io: ShareIo): Promise<number> {
  const analytics = task.analytics && new AnalyticsStore(task.analytics.file);
  const docs = task.docsFile === null ? null : new SqliteReadStore(task.docsFile);
  try {
    analytics?.bulkLoadMode();
    docs?.bulkLoadMode();
    const model = analytics && new AnalyticsModel(analytics);
    const fold = docs && new DocumentFold(allProjections.filter((p) => task.projections.includes(p.name)), docs);
    // The timeline's agents are the fold's (both fold every event from the start, the fold first).
    if (model && fold?.collections.includes('agents')) model.besideFold(fold.current);
    // Only the events something here reads are decoded, and only the data it reads.
    const reads = shareReads(task);
    const filter: PageFilter = { only: reads.only && new Set(reads.only), data: reads.data && new Set(reads.data) };
    const decoder = new PageDecoder(filter);
    let count = 0;
    let consumed = 0;
    let due = false;
    const apply = (e: RecordedEvent) => {
      fold?.apply(e);
      model?.apply(e);
      if (++count % task.pageSize === 0) due = true;
      if (task.dieAfter && count >= task.dieAfter.events) {
        if (task.dieAfter.how === 'exit') process.exit(3);
        throw new Error(`replay worker: injected failure after ${count} events`);
      }
    };
    for await (const page of io.pages) {
      decoder.decode(page, apply);
      // Pages are no longer than task.pageSize (the main thread reads them so).
      if (due) {
        due = false;
        await fold?.bound(task.maxDocs);
        if (model && model.unwritten >= FLUSH_EVERY) model.flush();
        io.progress(decoder.position);
      }
      io.consumed(++consumed);
    }
    if (model) finishAnalytics(model, analytics!, task.total);
    if (fold) await writeDocs(task, fold, docs!, io);
    return count;
  } finally {
    analytics?.close();
    await docs?.close();
  }
}

/**
 * Writes the documents folded into the shared staged store, in this thread's turn: straight into it,
 * or, when some were spilled to this thread's own store, all there first and then copied over.
 * Writing them where they are read saves copying them after both threads (~0.75 s for the bench's
 * 211,000 documents of calls).
 */
async function writeDocs(task: ReplayTask, fold: DocumentFold, own: SqliteReadStore, io: ShareIo): Promise<void> {
  const checkpoints = Object.fromEntries(task.checkpoints.map((name) => [name, task.total]));
  if (fold.hasSpilled) await fold.finish({});
  await io.turn();
  const into = new SqliteReadStore(task.docsInto);
  try {
    into.bulkLoadMode();
    if (fold.hasSpilled) {
      into.copyDocsFrom(task.docsFile!);
      await into.commit([], checkpoints);
    } else {
      await fold.finish(checkpoints, into);
    }
    into.finishBulkLoad();
  } finally {
    await into.close();
    await own.close();
  }
}

/** What the main thread posts, as it arrives. */
class Inbox {
  private readonly queue: ReplayInput[] = [];
  private wake: (() => void) | null = null;
  private readonly listener = (m: ReplayInput) => {
    this.queue.push(m);
    this.wake?.();
  };

  constructor() {
    parentPort!.on('message', this.listener);
  }

  async next(): Promise<ReplayInput> {
    if (this.queue.length === 0) await new Promise<void>((resolve) => (this.wake = resolve));
    this.wake = null;
    return this.queue.shift()!;
  }

  async *pages(): AsyncGenerator<Uint8Array> {
    for (;;) {
      const m = await this.next();
      if ('end' in m) return;
      if (!('page' in m)) throw new Error('replay worker: a turn to write before the end of the log');
      yield m.page;
    }
  }

  /** Listening no more lets the thread end once its work is done. */
  close(): void {
    parentPort!.off('message', this.listener);
  }
}

if (!isMainThread && (workerData as ReplayTask | undefined)?.task === 'replay-worker') {
  const post = (m: ReplayMessage) => parentPort!.postMessage(m);
  const inbox = new Inbox();
  try {
    const count = await foldShare(workerData as ReplayTask, {
      pages: inbox.pages(),
      progress: (position) => post({ progress: position }),
      consumed: (pages) => post({ consumed: pages }),
      async turn() {
        post({ folded: true });
        if (!('write' in (await inbox.next()))) throw new Error('replay worker: expected the turn to write');
      },
    });
    post({ done: count });
  } finally {
    inbox.close();
  }
}
