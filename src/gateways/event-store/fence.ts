/**
 * Fencing of the worker's decisions (docs/architecture.md, "Worker lease and fencing"). The worker
 * lease says who should act; a worker frozen past its lease (a GC pause, a stopped VM, a partition)
 * does not know it lost it and may still append when it wakes. So every append of the worker goes
 * through `guard()`, which adds to it, in the same transaction, an expectation on the fence stream:
 * "its revision is still the one my holding wrote". A new holder, before it acts, appends its
 * lease's fencing token to that stream (`arm`); from then on every append of an older holder is
 * refused by the event store itself (FencedOutError), whatever it decided while frozen.
 *
 * The check is in the append's own transaction on the embedded log (and on any store that checks an
 * entry without events atomically); KurrentDB refuses an append without events, so its adapter
 * checks that entry by a read just before the append (kurrentdb.ts): the window shrinks from a
 * lease's TTL to that round trip.
 */
import { type AppendResult, type EventStore, type StreamAppend, WrongExpectedRevisionError } from './port.js';

export const WORKER_FENCE_STREAM = 'worker-fence';

/** An append of a holding that a newer one has fenced off (or of a process that holds none). */
export class FencedOutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FencedOutError';
  }
}

interface FenceEvent {
  token: number;
}

export class Fence {
  private revision: number | null = null;
  /** Called once when an append finds a newer holding's fence (the worker then stops). */
  onFenced: (() => void) | null = null;

  constructor(
    private readonly events: EventStore,
    private readonly stream = WORKER_FENCE_STREAM,
  ) {}

  get armed(): boolean {
    return this.revision !== null;
  }

  /**
   * Writes `token` to the fence stream, so every older holding's guarded appends fail from now on.
   * A larger token already there means a newer holder fenced this one off: FencedOutError, unless
   * `stillHeld()` says this process holds the lease all the same (the lease's store lost its
   * counter: a Redis restarted without persistence), then this token is written after it.
   */
  async arm(token: number, stillHeld: () => Promise<boolean>): Promise<void> {
    for (let attempt = 0; attempt < 10; attempt++) {
      const fences = await this.events.readStream(this.stream);
      const last = fences.at(-1);
      const lastToken = (last?.data as FenceEvent | undefined)?.token ?? 0;
      if (lastToken > token && !(await stillHeld())) throw new FencedOutError(`a newer worker holding (token ${lastToken}) fenced off this one (token ${token})`);
      try {
        const r = await this.events.appendToStream(this.stream, [{ type: 'WorkerFenced', data: { token } satisfies FenceEvent }], { expectedRevision: last?.revision ?? 'no_stream' });
        this.revision = r.nextExpectedRevision;
        return;
      } catch (err) {
        if (!(err instanceof WrongExpectedRevisionError)) throw err;
      }
    }
    throw new FencedOutError('the fence stream kept changing while this worker tried to take it');
  }

  disarm(): void {
    this.revision = null;
  }

  private entry(): StreamAppend {
    if (this.revision === null) throw new FencedOutError('this process is not the active worker: its appends are fenced off');
    return { streamId: this.stream, events: [], expectedRevision: this.revision };
  }

  private fenced(err: unknown): unknown {
    if (!(err instanceof WrongExpectedRevisionError) || err.streamId !== this.stream) return err;
    const was = this.revision !== null;
    this.revision = null;
    if (was) this.onFenced?.();
    return new FencedOutError(`a newer worker holding fenced off this one (the fence stream is at ${err.actual}, this holding wrote ${String(err.expected)})`);
  }

  /** `store` with every append checked against this fence (reads and subscriptions pass through). */
  guard(store: EventStore): EventStore {
    const appendToStream: EventStore['appendToStream'] = async (streamId, events, options = {}) => {
      const onCommitted = options.onCommitted;
      const own = { streamId, events, expectedRevision: options.expectedRevision ?? 'any' };
      try {
        const [r] = await store.appendToStreams([own, this.entry()], onCommitted && { onCommitted: (rs: AppendResult[]) => onCommitted(rs[0]!) });
        return r!;
      } catch (err) {
        throw this.fenced(err);
      }
    };
    const appendToStreams: EventStore['appendToStreams'] = async (appends, options) => {
      try {
        const rs = await store.appendToStreams([...appends, this.entry()], options?.onCommitted && { onCommitted: (all) => options.onCommitted!(all.slice(0, -1)) });
        return rs.slice(0, -1);
      } catch (err) {
        throw this.fenced(err);
      }
    };
    const bound = new Map<PropertyKey, unknown>();
    return new Proxy(store, {
      get(target, prop) {
        if (prop === 'appendToStream') return appendToStream;
        if (prop === 'appendToStreams') return appendToStreams;
        const v = Reflect.get(target, prop, target);
        if (typeof v !== 'function') return v;
        if (!bound.has(prop)) bound.set(prop, v.bind(target));
        return bound.get(prop);
      },
    });
  }
}
