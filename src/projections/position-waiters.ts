/** Promises that resolve once a monotonically advancing position reaches a target. */
import { unavailable } from '../domain/errors.js';

interface Waiter {
  position: number;
  resolve: () => void;
  reject: (err: unknown) => void;
  timer: NodeJS.Timeout;
}

export class PositionWaiters {
  private current = 0;
  private waiters: Waiter[] = [];

  get position() {
    return this.current;
  }

  wait(position: number, timeoutMs: number): Promise<void> {
    if (position <= this.current) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        position,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.waiters = this.waiters.filter((w) => w !== waiter);
          reject(unavailable(`read models did not reach position ${position} within ${timeoutMs} ms`));
        }, timeoutMs),
      };
      this.waiters.push(waiter);
    });
  }

  advance(position: number) {
    if (position <= this.current) return;
    this.current = position;
    const ready = this.waiters.filter((w) => w.position <= position);
    if (ready.length === 0) return;
    this.waiters = this.waiters.filter((w) => w.position > position);
    for (const w of ready) {
      clearTimeout(w.timer);
      w.resolve();
    }
  }

  fail(err: unknown) {
    for (const w of this.waiters) {
      clearTimeout(w.timer);
      w.reject(err);
    }
    this.waiters = [];
  }
}
