/**
 * The timing of held commits, shared by the SQLite and PostgreSQL read stores (`coalesceMs`): a
 * commit that comes less than `coalesceMs` after the last store began is held (PendingWrites merges
 * it) and stored with the others once that time has passed; an idle store stores at once. Reads
 * through the store see held writes at once; another process sees them that much later, and a crash
 * loses them with their checkpoints (the projector applies those events again from the log).
 */
import { PendingWrites, type HeldRow } from './pending-writes.js';
import type { RowWrite } from './sqlite-writes.js';

/** Pending rows beyond this are stored at once (one transaction's rows are made JSON in one step). */
const MAX_PENDING = 1000;

export class HeldCommits {
  /** Commits not stored yet. */
  pending = new PendingWrites();
  /** The pending writes being stored (only where a store runs elsewhere than on this thread). */
  storing: { writes: PendingWrites; done: Promise<void> } | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** When the last store began (performance.now()). */
  private lastStore = -Infinity;
  /** A store run by the timer failed: the next commit retries it and fails with it if it fails again. */
  private failed = false;
  private closing = false;

  /**
   * `store` stores one batch in one transaction (`checkpoints` as JSON); it may throw at once.
   * `tracked`: the store finishes later, elsewhere (a writer thread, a server), so reads must know
   * what is on its way (`storing`); a store done on this thread before it returns needs no tracking.
   */
  constructor(
    private readonly coalesceMs: number,
    private readonly store: (rows: RowWrite[], checkpoints: string) => Promise<void>,
    private readonly tracked: boolean,
  ) {}

  /**
   * Holds a commit's rows, or stores them (with everything held before them, in order) at once when
   * the store is idle, when too much is held, or when `now`: then it resolves once they are stored.
   */
  async hold(rows: HeldRow[], checkpoints: Record<string, number>, now = false): Promise<void> {
    if (this.failed || !rows.every((r) => this.pending.accepts(r))) {
      this.failed = false;
      await this.drain();
    }
    this.pending.add(rows, checkpoints);
    if (now || this.pending.size >= MAX_PENDING) return this.drain();
    if (this.timer) return;
    const wait = this.lastStore + this.coalesceMs - performance.now();
    // Idle (nothing stored lately): stored at once, as without coalescing.
    if (wait <= 0 && !this.storing) return this.drain();
    this.schedule(Math.max(wait, 1));
  }

  /** Stores every held write; resolves once they are committed. */
  async drain(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    while (this.storing || this.pending.size > 0) {
      if (this.storing) await this.storing.done;
      else await this.storePending();
    }
  }

  /** Waits for the held writes to be stored when a read or direct write touches one of them. */
  async settle(touches: (p: PendingWrites) => boolean): Promise<void> {
    if (touches(this.pending) || (this.storing !== null && touches(this.storing.writes))) await this.drain();
  }

  /** Stores what is held and holds nothing more by timer. */
  close(): Promise<void> {
    this.closing = true;
    return this.drain();
  }

  private schedule(ms: number) {
    this.timer = setTimeout(() => {
      this.timer = null;
      this.drain().catch(() => {
        // Kept pending: retried by the next commit (which then fails with the error) or timer.
        this.failed = true;
        if (!this.timer && !this.closing) this.schedule(Math.max(this.coalesceMs, 100));
      });
    }, ms);
  }

  private storePending(): Promise<void> {
    const batch = this.pending;
    this.pending = new PendingWrites();
    const { rows, checkpoints } = batch.take();
    this.lastStore = performance.now();
    // The executor runs now (a store on this thread is done when it returns), and a throw rejects.
    const done = new Promise<void>((resolve) => resolve(this.store(rows, checkpoints))).catch((err: unknown) => {
      // Not stored: back in front of what came meanwhile.
      batch.absorb(this.pending);
      this.pending = batch;
      throw err;
    });
    if (!this.tracked) return done;
    const storing = { writes: batch, done: done.finally(() => (this.storing = null)) };
    this.storing = storing;
    return storing.done;
  }
}
