/** Promises that resolve once a monotonically advancing position reaches a target. */
import { unavailable } from '../domain/errors.js';

interface Waiter {
  position: number;
  deadline: number;
  timeoutMs: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export class PositionWaiters {
  private current = 0;
  private waiters: Waiter[] = [];
  /** One timer for the earliest deadline, not one per waiter: every request waits here. */
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;

  get position() {
    return this.current;
  }

  wait(position: number, timeoutMs: number): Promise<void> {
    if (position <= this.current) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const deadline = Date.now() + timeoutMs;
      this.waiters.push({ position, deadline, timeoutMs, resolve, reject });
      if (deadline < this.timerAt) this.arm(deadline);
    });
  }

  advance(position: number) {
    if (position <= this.current) return;
    this.current = position;
    let kept = 0;
    const ready: Waiter[] = [];
    for (const w of this.waiters) {
      if (w.position <= position) ready.push(w);
      else this.waiters[kept++] = w;
    }
    if (ready.length === 0) return;
    this.waiters.length = kept;
    if (kept === 0) this.disarm();
    for (const w of ready) w.resolve();
  }

  fail(err: unknown) {
    const all = this.waiters;
    this.waiters = [];
    this.disarm();
    for (const w of all) w.reject(err);
  }

  private arm(at: number) {
    this.disarm();
    this.timerAt = at;
    this.timer = setTimeout(() => this.expire(), Math.max(0, at - Date.now()));
  }

  private disarm() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = Infinity;
  }

  private expire() {
    this.timer = null;
    this.timerAt = Infinity;
    const now = Date.now();
    let next = Infinity;
    let kept = 0;
    const expired: Waiter[] = [];
    for (const w of this.waiters) {
      if (w.deadline <= now) expired.push(w);
      else {
        this.waiters[kept++] = w;
        next = Math.min(next, w.deadline);
      }
    }
    this.waiters.length = kept;
    if (next < Infinity) this.arm(next);
    for (const w of expired) w.reject(unavailable(`read models did not reach position ${w.position} within ${w.timeoutMs} ms`));
  }
}
