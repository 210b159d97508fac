/**
 * Runs work that must run once (the `worker` role) only while this process holds its lease: waits as
 * a standby until the lease is free, starts the work, renews the lease, and stops the work if the
 * lease is ever lost. The lease is taken before the work starts, so nothing (crash recovery
 * included) runs in a second process while the first is alive.
 *
 * With a fence, the holding's fencing token is written to the event store before the work starts,
 * and the work's appends are checked against it (gateways/event-store/fence.ts): a holder frozen
 * past its lease finds its appends refused once a newer holder armed the fence, and stops.
 */
import type { Logger } from 'pino';
import type { Lease } from '../gateways/lease/port.js';
import { FencedOutError, type Fence } from '../gateways/event-store/fence.js';

export interface LeasedWork {
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface LeaseKeeperOptions {
  /** How often a standby tries to take the lease (default 250 ms). */
  pollMs?: number;
  /** How often the holder renews it (default 1000 ms; keep it well under the lease's TTL). */
  renewMs?: number;
  /** Armed with the holding's token before the work starts; the work appends through `fence.guard()`. */
  fence?: Fence;
}

export class LeaseKeeper {
  private stopped = false;
  private active = false;
  private timer: NodeJS.Timeout | null = null;
  private wake: (() => void) | null = null;
  private running: Promise<void> = Promise.resolve();
  private readonly pollMs: number;
  private readonly renewMs: number;
  private readonly fence: Fence | null;

  constructor(
    private readonly lease: Lease,
    private readonly work: LeasedWork,
    private readonly logger: Pick<Logger, 'info' | 'warn' | 'error'>,
    options: LeaseKeeperOptions = {},
  ) {
    this.pollMs = options.pollMs ?? 250;
    this.renewMs = options.renewMs ?? 1000;
    this.fence = options.fence ?? null;
    if (this.fence) this.fence.onFenced = () => void this.lose('worker fenced off: a newer worker holding appended to the fence; this worker stopped');
  }

  /** Whether this process runs the work now. */
  get isActive(): boolean {
    return this.active;
  }

  /**
   * Tries the lease once and starts the work when it is held; otherwise keeps trying in the
   * background. Resolves with whether this process is active.
   */
  async start(): Promise<boolean> {
    if ((await this.lease.tryAcquire()) && (await this.activate())) return true;
    this.logger.info('worker lease held by another process: standing by');
    this.running = this.standBy();
    return false;
  }

  /** Resolves once this process is active (tests). */
  async whenActive(timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.active) {
      if (Date.now() > deadline) throw new Error('the worker lease was not taken in time');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  private async standBy(): Promise<void> {
    while (!this.stopped) {
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        this.timer = setTimeout(resolve, this.pollMs);
      });
      if (this.stopped) return;
      try {
        if ((await this.lease.tryAcquire()) && (await this.activate())) {
          this.logger.info('worker lease taken over: this process is now the active worker');
          return;
        }
      } catch (err) {
        this.logger.warn({ err }, 'worker lease: could not try to take it');
      }
    }
  }

  /** Starts the work on a lease just taken; false when a newer holding fenced this one off first. */
  private async activate(): Promise<boolean> {
    if (this.fence) {
      try {
        await this.fence.arm(this.lease.token!, () => this.lease.renew());
      } catch (err) {
        if (!(err instanceof FencedOutError)) throw err;
        this.logger.warn({ err: err.message }, 'worker lease: a newer holding fenced this one off; standing by');
        return false;
      }
    }
    this.active = true;
    this.timer = setInterval(() => void this.renew(), this.renewMs);
    this.timer.unref();
    await this.work.start();
    return true;
  }

  private async renew(): Promise<void> {
    if (!this.active || this.stopped) return;
    let held = false;
    try {
      held = await this.lease.renew();
    } catch (err) {
      this.logger.warn({ err }, 'worker lease: renewal failed');
      return; // the lease runs until its TTL; the next renewal may succeed
    }
    if (held) return;
    await this.lose('worker lease lost to another process: this worker stopped; restart the process to stand by again');
  }

  /** Another process took over (this one was frozen past the TTL): stop at once. Restarting the process makes it a standby again. */
  private async lose(why: string): Promise<void> {
    if (!this.active) return;
    this.logger.error(why);
    this.active = false;
    this.fence?.disarm();
    if (this.timer) clearInterval(this.timer);
    await this.work.stop().catch((err) => this.logger.error({ err }, 'worker stop after a lost lease failed'));
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) {
      clearTimeout(this.timer);
      clearInterval(this.timer);
    }
    this.wake?.();
    await this.running;
    if (this.active) {
      this.active = false;
      await this.work.stop();
      this.fence?.disarm();
      await this.lease.release();
    }
    await this.lease.close();
  }
}
