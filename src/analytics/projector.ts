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
import { AnalyticsModel } from './model.js';
import type { AnalyticsStore } from './store.js';

export interface Analytics {
  store: AnalyticsStore;
  /** Resolves once the analytics models hold every event stored before the call. */
  caughtUp(timeoutMs?: number): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

const MAX_BATCH = 2000;

/** The analytics read models, folded in this process (role `projector`). */
export function analyticsProjector(events: EventStore, store: AnalyticsStore, logger?: Pick<Logger, 'error'>): Analytics {
  const model = new AnalyticsModel(store);
  const waiters = new PositionWaiters();
  let sub: Subscription | null = null;
  let loop: Promise<void> | null = null;
  let stopped = false;
  let scheduled = false;
  let failure: unknown = null;

  const flush = () => {
    if (model.unwritten === 0) return;
    for (let attempt = 0; ; attempt++) {
      try {
        model.flush();
        break;
      } catch (err) {
        // The store refused the transaction: nothing of it was written; the same write is tried again.
        logger?.error({ err, attempt }, 'analytics write failed; retrying');
        if (attempt >= 5) throw err;
      }
    }
    waiters.advance(model.position);
  };

  return {
    store,
    async start() {
      await model.load(events);
      waiters.advance(model.position);
      sub = events.subscribeToAll({ after: model.position });
      const s = sub;
      loop = (async () => {
        try {
          for await (const e of s) {
            model.apply(e);
            if (model.unwritten >= MAX_BATCH) flush();
            else if (!scheduled) {
              // Events already read arrive through microtasks: writing on the next macrotask batches them.
              scheduled = true;
              setImmediate(() => {
                scheduled = false;
                if (!stopped || store.db.open) flush();
              });
            }
            if (stopped) break;
          }
        } catch (err) {
          if (!stopped) {
            failure = err;
            logger?.error({ err }, 'analytics projector stopped');
            waiters.fail(err);
          }
        }
      })();
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
      if (store.db.open) flush();
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
