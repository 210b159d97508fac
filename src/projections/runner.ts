/**
 * Runs projections over the event log. Each batch of events is applied to the documents it
 * touches and committed with the new checkpoints in one read-store write, so every event is
 * applied exactly once, even across a crash between events. Each written document carries the
 * position of the last event applied to it, and events at or below a document's stored position
 * are skipped: a store without transactions may have stored documents whose checkpoint was lost.
 */
import type { Logger } from 'pino';
import type { EventStore, RecordedEvent, Subscription } from '../gateways/event-store/port.js';
import type { Doc, DocWrite, ReadStore } from '../gateways/read-store/port.js';
import { collectionOf, type Projection } from './projection.js';
import { PositionWaiters } from './position-waiters.js';
import { backoffMs } from '../domain/backoff.js';

export interface ProjectionRunnerOptions {
  maxBatch?: number;
  /** Documents one commit writes at most, unless one event alone touches more (default 5,000). */
  maxBatchDocs?: number;
  logger?: Pick<Logger, 'error' | 'warn' | 'info'>;
}

export class ProjectionRunner {
  private readonly checkpoints = new Map<string, number>();
  /** Per projection, the event types it reads (null: it names none, so any). */
  private readonly handled: (ReadonlySet<string> | null)[];
  private readonly waiters = new PositionWaiters();
  private subscription: Subscription | null = null;
  private queue: RecordedEvent[] = [];
  private flushing: Promise<void> = Promise.resolve();
  private flushScheduled = false;
  private loop: Promise<void> | null = null;
  private stopped = false;
  private failure: unknown = null;

  constructor(
    private readonly events: EventStore,
    private readonly store: ReadStore,
    private readonly projections: Projection<any>[],
    private readonly options: ProjectionRunnerOptions = {},
  ) {
    this.handled = projections.map((p) => (p.canHandle ? new Set(p.canHandle) : null));
    const names = new Set<string>();
    for (const p of projections) {
      if (names.has(p.name)) throw new Error(`duplicate projection ${p.name}`);
      names.add(p.name);
    }
  }

  /** Lowest checkpoint of all projections: every event at or before it is applied everywhere. */
  get position(): number {
    let min = Infinity;
    for (const p of this.projections) min = Math.min(min, this.checkpoints.get(p.name) ?? 0);
    return min === Infinity ? 0 : min;
  }

  async start(): Promise<void> {
    for (const p of this.projections) this.checkpoints.set(p.name, await this.store.checkpoint(p.name));
    this.waiters.advance(this.position);
    this.subscription = this.events.subscribeToAll({ after: this.position });
    this.loop = this.consume(this.subscription);
  }

  /** Resolves once every projection has applied the event at `position`. */
  waitFor(position: number, timeoutMs = 10_000): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    return this.waiters.wait(position, timeoutMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.subscription?.close();
    await this.loop;
    // Apply what was already received while the stores are still open; a flush scheduled for
    // later then finds nothing to do instead of failing against closed stores.
    await this.flush();
  }

  private async consume(sub: Subscription) {
    const maxBatch = this.options.maxBatch ?? 500;
    try {
      pages: for await (const page of sub.batches()) {
        for (const event of page) {
          this.queue.push(event);
          if (this.queue.length >= maxBatch) await this.flush();
          else if (!this.flushScheduled) {
            // Pages already read arrive through microtasks; flushing on the next macrotask batches them.
            this.flushScheduled = true;
            setImmediate(() => {
              this.flushScheduled = false;
              void this.flush();
            });
          }
          if (this.stopped) break pages;
        }
      }
    } catch (err) {
      if (!this.stopped) {
        this.failure = err;
        this.options.logger?.error({ err }, 'projection runner stopped: event subscription failed');
        this.waiters.fail(err);
      }
    }
  }

  private flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.applyQueued());
    return this.flushing;
  }

  private async applyQueued(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue;
      this.queue = [];
      for (let attempt = 0; ; attempt++) {
        try {
          await this.applyBatch(batch);
          break;
        } catch (err) {
          // A store outage: retry the same batch; nothing of it was committed.
          this.options.logger?.error({ err, attempt }, 'projection batch failed; retrying');
          if (this.stopped) return;
          await new Promise((r) => setTimeout(r, backoffMs(attempt)));
        }
      }
    }
  }

  /**
   * Applies a batch with one commit. Exposed for tests that simulate crashes between batches. A batch
   * whose events touch more than `maxBatchDocs` documents (a dialer upload's 100,000 contacts) is
   * applied in runs of events that touch at most that many, each with its own commit and a turn of
   * the event loop between: one commit of them all held the platform thread for seconds.
   */
  async applyBatch(batch: RecordedEvent[]): Promise<void> {
    for (let at = 0; at < batch.length; ) {
      if (at > 0) await new Promise((r) => setImmediate(r)); // others answered between the runs' commits
      const run = await this.keyRun(batch, at);
      await this.applyRun(at === 0 && run.end === batch.length ? batch : batch.slice(at, run.end), run.touched);
      at = run.end;
    }
  }

  /**
   * From `at`, the events up to the first that would take the documents touched past `maxBatchDocs`
   * (at least one event), and the ids each projection's events touch. Keys are made event by event,
   * so the events after the run cost nothing yet.
   */
  private async keyRun(batch: RecordedEvent[], at: number): Promise<{ end: number; touched: Touched[] }> {
    const maxDocs = this.options.maxBatchDocs ?? MAX_BATCH_DOCS;
    const from: number[] = [];
    for (const p of this.projections) {
      // A runner that was never started (a test replaying a crash) must still skip what is committed.
      if (!this.checkpoints.has(p.name)) this.checkpoints.set(p.name, await this.store.checkpoint(p.name));
      from.push(this.checkpoints.get(p.name)!);
    }
    const touched: Touched[] = this.projections.map((_, k) => ({ k, keyed: [] }));
    let touches = 0;
    let end = at;
    for (; end < batch.length; end++) {
      const event = batch[end]!;
      let mine = 0;
      for (let k = 0; k < this.projections.length; k++) {
        // Not a type it reads (most projections, for most events): only its checkpoint moves.
        const handled = this.handled[k]!;
        if ((handled !== null && !handled.has(event.type)) || event.position <= from[k]!) continue;
        const ids = this.projections[k]!.keys(event);
        if (ids.length === 0) continue;
        touched[k]!.keyed.push({ event, ids });
        mine += ids.length;
      }
      if (touches + mine > maxDocs && end > at) {
        for (const t of touched) if (t.keyed.at(-1)?.event === event) t.keyed.pop();
        break;
      }
      touches += mine;
    }
    return { end, touched: touched.filter((t) => t.keyed.length > 0) };
  }

  /** One run of events, keyed (`keyRun`), applied with one commit. */
  private async applyRun(batch: RecordedEvent[], touched: Touched[]): Promise<void> {
    const docs = new Map<string, { collection: string; id: string; doc: Doc | null; stored: number; written: number; dirty: boolean }>();
    const nextCheckpoints: Record<string, number> = {};
    const last = batch[batch.length - 1]!.position;
    for (const p of this.projections) if (last > this.checkpoints.get(p.name)!) nextCheckpoints[p.name] = last;
    for (const { k, keyed } of touched) {
      const p = this.projections[k]!;
      const collection = collectionOf(p);
      // The documents the batch touches, read in one query (a call's first events miss in every
      // collection: one query each cost a fifth of a delivery's projection).
      const wanted = new Set<string>();
      const keyOf = (id: string) => `${collection}\u0000${id}`;
      for (const { ids } of keyed) for (const id of ids) if (!docs.has(keyOf(id))) wanted.add(id);
      if (wanted.size > 0) {
        const ids = [...wanted];
        const found = await this.store.getVersionedMany(collection, ids);
        ids.forEach((id, i) => docs.set(keyOf(id), { collection, id, doc: found[i]!.doc, stored: found[i]!.position, written: 0, dirty: false }));
      }
      for (const { event, ids } of keyed) {
        for (const id of ids) {
          const entry = docs.get(keyOf(id))!;
          // Already in the stored document: its commit got that far before its checkpoint was lost.
          if (event.position <= entry.stored) continue;
          const next = p.evolve(entry.doc, event, id);
          if (next !== entry.doc) {
            entry.doc = next;
            entry.written = event.position;
            entry.dirty = true;
          }
        }
      }
    }
    const writes: DocWrite[] = [];
    for (const e of docs.values()) if (e.dirty) writes.push({ collection: e.collection, id: e.id, doc: e.doc, position: e.written });
    await this.store.commit(writes, nextCheckpoints);
    for (const [name, pos] of Object.entries(nextCheckpoints)) this.checkpoints.set(name, pos);
    this.waiters.advance(this.position);
  }
}

/** Documents one commit of the projector writes at most, unless one event alone touches more. */
const MAX_BATCH_DOCS = 5000;

type Touched = { k: number; keyed: { event: RecordedEvent; ids: readonly string[] }[] };
