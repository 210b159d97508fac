/**
 * Readiness (CONTRACT section 13): a process is ready when its stores answer and its read models
 * have caught up with the log as it stood when the process started. Catching up is latched: once
 * reached, later lag (a burst of events) does not take the process out of rotation; a store that
 * stops answering does.
 */

export interface ReadinessProbe {
  /** Log head when the process started. */
  startHead: number;
  /** The position every read model has applied. */
  projectedPosition(): Promise<number>;
  /** Named checks that reject (or time out) when a store does not answer. */
  stores: Record<string, () => Promise<unknown>>;
  timeoutMs?: number;
}

export type ReadinessResult = { ready: true } | { ready: false; reason: string };

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

export class Readiness {
  private caughtUp = false;

  constructor(private readonly probe: ReadinessProbe) {}

  async check(): Promise<ReadinessResult> {
    const ms = this.probe.timeoutMs ?? 2000;
    for (const [name, ping] of Object.entries(this.probe.stores)) {
      try {
        await within(Promise.resolve().then(ping), ms, name);
      } catch (err) {
        return { ready: false, reason: `${name}: ${err instanceof Error ? err.message : String(err)}` };
      }
    }
    if (!this.caughtUp) {
      const at = await within(this.probe.projectedPosition(), ms, 'read store').catch(() => -1);
      if (at < this.probe.startHead) {
        return { ready: false, reason: `read models at position ${Math.max(at, 0)} of ${this.probe.startHead} (catching up with the log)` };
      }
      this.caughtUp = true;
    }
    return { ready: true };
  }
}
