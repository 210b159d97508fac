/**
 * Follows the event log from a stored checkpoint and hands each event to a handler, at least once:
 * the checkpoint moves after the handler finished, so a crash replays the events since. Handlers must
 * be idempotent (they enqueue jobs with ids derived from the event, or append with expected revisions).
 */
import type { Context } from '../context.js';
import type { Subscription } from '../gateways/event-store/port.js';
import { eventTypes, type EventType, type Recorded } from '../domain/platform-events.js';

export interface Follower {
  /** Position of the last event read (handled, or not wanted). */
  readonly position: number;
  stop(): Promise<void>;
}

/** Hands `handle` the events of `types` (typed), from the checkpoint `name`. */
export async function follow<T extends EventType>(ctx: Context, name: string, types: readonly T[], handle: (e: Recorded<T>) => Promise<void>): Promise<Follower> {
  const checkpointName = `worker:${name}`;
  const wanted = eventTypes(...types);
  let position = await ctx.reads.checkpoint(checkpointName);
  let stopped = false;
  const sub: Subscription = ctx.events.subscribeToAll({ after: position });
  let saving: Promise<void> = Promise.resolve();
  let saveQueued = false;
  let saved = position;
  const save = () => {
    // Coalesced: at most one write waiting behind the one in flight, and it writes the latest position.
    if (saveQueued) return;
    saveQueued = true;
    saving = saving.then(async () => {
      saveQueued = false;
      if (position <= saved) return;
      const at = position;
      try {
        await ctx.reads.commit([], { [checkpointName]: at });
        saved = at;
      } catch (err) {
        // Not fatal: a later save writes a later position; a crash meanwhile replays a little more.
        ctx.logger.warn({ err, worker: name }, 'could not store the worker checkpoint');
      }
    });
  };
  const loop = (async () => {
    try {
      for await (const e of sub) {
        if (stopped) break;
        if (wanted.has(e)) {
          for (let attempt = 0; ; attempt++) {
            try {
              await handle(e);
              break;
            } catch (err) {
              ctx.logger.error({ err, worker: name, position: e.position, attempt }, 'worker failed on an event; retrying');
              if (stopped) return;
              await new Promise((r) => setTimeout(r, Math.min(5000, 50 * 2 ** attempt)));
            }
          }
          position = e.position;
          save();
        } else {
          position = e.position;
        }
      }
    } catch (err) {
      if (!stopped) ctx.logger.error({ err, worker: name }, 'worker stopped: event subscription failed');
    }
  })();
  return {
    get position() {
      return position;
    },
    async stop() {
      stopped = true;
      sub.close();
      await loop;
      save();
      await saving;
    },
  };
}
