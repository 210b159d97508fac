/**
 * Lease port: at most one holder of a named lease at a time, across processes. The holder renews
 * it; a holder that stops renewing (killed, frozen, partitioned) loses it after `ttlMs`, and one
 * whose process is known dead loses it at once. Work that must run once (the call-flow worker,
 * which owns the switch) runs only while its lease is held.
 *
 * Every holding has a fencing token: a number larger than every token the lease's store handed out
 * before, so whatever a holder does can be checked against newer holdings (docs/architecture.md,
 * "Worker lease and fencing"). Retaking a lease one still holds keeps its token.
 */
export interface Lease {
  /** The fencing token of this process's holding, set by a successful `tryAcquire`; null before. */
  readonly token: number | null;
  /** Takes the lease when it is free, expired or held by a dead process; true when held now. */
  tryAcquire(): Promise<boolean>;
  /** Extends the lease; false when it was lost (another process holds it now). */
  renew(): Promise<boolean>;
  /** Gives the lease up (a standby takes it at once). */
  release(): Promise<void>;
  close(): Promise<void>;
}
