/**
 * Runs steps one at a time per key (a call's id) and keys side by side: the call-flow worker's steps
 * of one call never interleave, while calls proceed independently. A step that fails is reported
 * and the next step of that key still runs. Keys with nothing queued are forgotten.
 */
export class SerialRunner {
  private readonly chains = new Map<string, Promise<void>>();
  private readonly queued = new Map<string, number>();

  constructor(private readonly onError: (err: unknown, key: string) => void) {}

  /** Queues `step` after every step queued so far under `key`. */
  run(key: string, step: () => Promise<void>): void {
    const prev = this.chains.get(key) ?? Promise.resolve();
    this.queued.set(key, (this.queued.get(key) ?? 0) + 1);
    const next = prev
      .then(() => {
        this.queued.set(key, this.queued.get(key)! - 1);
        return step();
      })
      .catch((err) => this.onError(err, key))
      .finally(() => {
        if (this.chains.get(key) === next) {
          this.chains.delete(key);
          this.queued.delete(key);
        }
      });
    this.chains.set(key, next);
  }

  /** Steps of `key` queued and not yet started. */
  waiting(key: string): number {
    return this.queued.get(key) ?? 0;
  }

  /** Keys with steps queued or running. */
  get busy(): number {
    return this.chains.size;
  }

  /** Waits for the steps queued so far (not for those they queue in turn). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.chains.values()]);
  }

  /** Waits until no step is queued or running, including steps queued meanwhile. */
  async idle(): Promise<void> {
    while (this.chains.size) await this.settled();
  }
}

/** Hands each event of the subscription to `onEvent`, in order, until `stopped`; a failed subscription is reported unless stopping. */
export async function consumeEvents<E>(sub: { batches(): AsyncIterable<readonly E[]> }, onEvent: (e: E) => void, stopped: () => boolean, onError: (err: unknown) => void): Promise<void> {
  try {
    pages: for await (const page of sub.batches()) {
      for (const e of page) {
        if (stopped()) break pages;
        onEvent(e);
      }
    }
  } catch (err) {
    if (!stopped()) onError(err);
  }
}
