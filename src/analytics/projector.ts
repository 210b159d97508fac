/**
 * Keeps the analytics store current: follows the log from the store's checkpoint, folds batches
 * with the AnalyticsModel and writes each batch with its checkpoint in one transaction (so every
 * event counts exactly once). Runs with the `projector` role; an api-only process reads the store
 * and waits on its stored checkpoint instead.
 */
import type { Logger } from 'pino';
import type { EventStore, Subscription } from '../gateways/event-store/port.js';
import { PositionWaiters } from '../projections/position-waiters.js';
import { unavailable } from '../domain/errors.js';
import { backoffMs, type Backoff } from '../domain/backoff.js';
import { AnalyticsModel } from './model.js';
import { CheckpointMovedError, type AnalyticsStore } from './store.js';

export interface Analytics {
  store: AnalyticsStore;
  /** Resolves once the analytics models hold every event stored before the call. */
  caughtUp(timeoutMs?: number): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

const MAX_BATCH = 2000;

/**
 * Writes at most this often while events keep coming (at once when they come further apart): the
 * rows of an agent's day, a service's hour, an open login are kept per key until written, so a busy
 * service's hundreds of events between two writes cost one row each, not one each. Reports wait
 * for the write (caughtUp), so a report asked under load is at most this much later.
 */
const WRITE_EVERY_MS = 20;

/** Refused writes in a row before the projector stops for good (the followers' backoff between them: 1.55 s in all). */
const WRITE_ATTEMPTS = 6;

/** Following the log again after it could not be read: 200 ms, doubling, at most 5 s. */
const RESUME_BACKOFF: Backoff = { first: 200, max: 5000 };

/** What the analytics thread (thread.ts) tells the platform thread. */
export interface ProjectorHooks {
  /** The models hold every event up to `position` (loaded, or written). */
  onAdvance?(position: number): void;
  /** The projector stopped for good. */
  onFail?(err: unknown): void;
}

/** The analytics read models, folded in this process (role `projector`). */
export function analyticsProjector(events: EventStore, store: AnalyticsStore, logger?: Pick<Logger, 'error' | 'warn'>, hooks: ProjectorHooks = {}): Analytics {
  let model = new AnalyticsModel(store);
  const waiters = new PositionWaiters();
  let sub: Subscription | null = null;
  let loop: Promise<void> | null = null;
  let stopped = false;
  let scheduled = false;
  let lastWrite = 0;
  let failure: unknown = null;
  /**
   * Another process wrote the store past this one's checkpoint (`telephony export calls` catching up
   * while the server runs): what it holds in memory is dropped and the fold starts again from the store.
   */
  let moved = false;

  /** The one write in progress, if any: a flush asked meanwhile waits for it (and its retries). */
  let flushing: Promise<void> | null = null;
  const flush = (): Promise<void> => (flushing ??= writeOut().finally(() => (flushing = null)));

  /**
   * Writes what is folded. The store refusing the transaction (locked, a full disk) wrote nothing of
   * it, so the same write, with whatever was folded since, is tried again after the followers'
   * backoff; the projector stops for good only after WRITE_ATTEMPTS refusals in a row.
   */
  const writeOut = async () => {
    for (let attempt = 0; ; attempt++) {
      if (moved || model.unwritten === 0) return;
      lastWrite = Date.now();
      try {
        model.flush();
        break;
      } catch (err) {
        if (err instanceof CheckpointMovedError) {
          logger?.warn({ err }, 'analytics store written by another process; folding again from its checkpoint');
          moved = true;
          sub?.close();
          return;
        }
        logger?.error({ err, attempt }, 'analytics write failed; retrying');
        if (attempt >= WRITE_ATTEMPTS - 1) throw err;
        await new Promise((r) => setTimeout(r, backoffMs(attempt)));
      }
    }
    waiters.advance(model.position);
    hooks.onAdvance?.(model.position);
  };

  /** The model as the store holds it, and a subscription from its checkpoint. */
  const begin = async () => {
    model = new AnalyticsModel(store);
    await model.load(events);
    moved = false;
    waiters.advance(model.position);
    hooks.onAdvance?.(model.position);
    sub = events.subscribeToAll({ after: model.position });
    return sub;
  };

  /**
   * The log could not be read (its server unreachable, a broken connection): what is in memory is
   * dropped and the fold starts again from the store once the log answers. Stopping for good here
   * left a host that lost its database for a moment answering 503 on analytics until restarted.
   */
  const resume = async (err: unknown): Promise<Subscription | null> => {
    logger?.warn({ err: String(err) }, 'analytics projector: reading the log failed; following again once it answers');
    for (let attempt = 0; !stopped; attempt++) {
      await new Promise((r) => setTimeout(r, backoffMs(attempt, RESUME_BACKOFF)));
      if (stopped) return null;
      try {
        return await begin();
      } catch (again) {
        err = again;
      }
    }
    return null;
  };

  const follow = async (first: Subscription) => {
    let s = first;
    for (;;) {
      // True while waiting for the log's next page: a failure there is the log's, not the fold's.
      let reading = true;
      try {
        pages: for await (const page of s.batches()) {
          reading = false;
          for (const e of page) {
            model.apply(e);
            if (model.unwritten >= MAX_BATCH) await flush();
            else if (!scheduled) {
              // Pages already read arrive through microtasks: writing on the next macrotask batches them.
              scheduled = true;
              const write = () => {
                scheduled = false;
                if (!stopped || store.db.open) flush().catch(fail);
              };
              const wait = lastWrite + WRITE_EVERY_MS - Date.now();
              if (wait <= 0) setImmediate(write);
              else setTimeout(write, wait);
            }
            if (stopped || moved) break pages;
          }
          reading = true;
        }
      } catch (err) {
        if (!reading || stopped) {
          fail(err);
          return;
        }
        s.close();
        const next = await resume(err);
        if (!next) return;
        s = next;
        continue;
      }
      if (stopped || !moved) return;
      s.close();
      try {
        s = await begin();
      } catch (err) {
        fail(err);
        return;
      }
    }
  };

  const fail = (err: unknown) => {
    if (stopped || failure) return;
    failure = err;
    logger?.error({ err }, 'analytics projector stopped');
    waiters.fail(err);
    sub?.close();
    hooks.onFail?.(err);
  };

  return {
    store,
    async start() {
      loop = follow(await begin());
    },
    async caughtUp(timeoutMs = 10_000) {
      if (failure) throw unavailable('the analytics read models are not available');
      const head = await events.headPosition();
      await waiters.wait(head, timeoutMs);
    },
    async stop() {
      stopped = true;
      sub?.close();
      await loop;
      if (store.db.open && !failure) await flush();
      store.close();
    },
  };
}

/** The analytics read models as another process keeps them: waits by polling the stored checkpoint. */
export function analyticsReader(events: EventStore, store: AnalyticsStore, pollMs = 20): Analytics {
  return {
    store,
    async start() {},
    async caughtUp(timeoutMs = 10_000) {
      const head = await events.headPosition();
      const deadline = Date.now() + timeoutMs;
      while (store.checkpoint() < head) {
        if (Date.now() > deadline) throw unavailable(`analytics read models did not reach position ${head} within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, pollMs));
      }
    },
    async stop() {
      store.close();
    },
  };
}
