/**
 * Follows the event log from a stored checkpoint and hands each event to a handler, at least once:
 * the checkpoint moves after the handler finished, and what it held (Hold), so a crash replays the
 * events since. Handlers must be idempotent (they enqueue jobs with ids derived from the event, or
 * append with expected revisions).
 */
import type { Context } from '../context.js';
import type { Subscription } from '../gateways/event-store/port.js';
import { eventTypes, type EventType, type Recorded } from '../commands/platform-events.js';
import { backoffMs } from '../domain/backoff.js';

/**
 * The stored checkpoint trails the handled events by at most this long. A crash replays what it had
 * not passed yet (handlers are idempotent); meanwhile a busy follower writes it a few times a second,
 * not once per event (a read-store transaction each: more than one per simulated call before).
 */
export const CHECKPOINT_EVERY_MS = 200;

export interface Follower {
  /** Position of the last event read (handled, or not wanted). */
  readonly position: number;
  stop(): Promise<void>;
}

export interface FollowOptions {
  /**
   * Wanted events handled at once (default 1: one after the other). Above 1 the handlers must not
   * depend on each other's order; their appends then share commits and their enqueues share syncs.
   * The checkpoint still moves only past events whose handlers, and all earlier ones, finished.
   */
  concurrency?: number;
}

/**
 * Keeps the checkpoint at an event until `until` settles, without holding a handler's slot: work the
 * handler started and left running (an HTTP attempt), which a crash must see again. When `until`
 * rejects, the event is handled again, as when its handler throws.
 */
export type Hold = (until: Promise<unknown>) => void;

/** Hands `handle` the events of `types` (typed), from the checkpoint `name`. */
export async function follow<T extends EventType>(
  ctx: Context,
  name: string,
  types: readonly T[],
  handle: (e: Recorded<T>, hold: Hold) => Promise<void>,
  options: FollowOptions = {},
): Promise<Follower> {
  const concurrency = Math.max(1, options.concurrency ?? 1);
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
  /** Events read and not yet passed by the checkpoint, oldest first. */
  const inFlight: { position: number; finished: boolean; done: Promise<void> }[] = [];
  let saveTimer: NodeJS.Timeout | null = null;
  const saveSoon = () => {
    if (saveTimer || stopped) return;
    saveTimer = setTimeout(() => {
      saveTimer = null;
      save();
    }, CHECKPOINT_EVERY_MS);
    saveTimer.unref();
  };
  let running = 0;
  let slotFreed: (() => void) | null = null;
  const advance = () => {
    let moved = false;
    while (inFlight[0]?.finished) {
      position = inFlight.shift()!.position;
      moved = true;
    }
    if (moved) saveSoon();
  };
  const freeSlot = () => {
    running--;
    slotFreed?.();
  };
  /** Handles the event until it succeeds (its holds included); its slot is freed once its handler returned or gave up. */
  const run = async (e: Recorded<T>) => {
    let slot = true;
    try {
      for (let attempt = 0; ; attempt++) {
        try {
          const held: Promise<unknown>[] = [];
          await handle(e, (until) => void held.push(until));
          if (slot) freeSlot();
          slot = false;
          if (held.length > 0) await Promise.all(held);
          return;
        } catch (err) {
          // Stopping: the event is left for the next start, which handles it again.
          if (stopped) throw err;
          ctx.logger.error({ err, worker: name, position: e.position, attempt }, 'worker failed on an event; retrying');
          await new Promise((r) => setTimeout(r, backoffMs(attempt)));
        }
      }
    } finally {
      if (slot) freeSlot();
    }
  };
  const loop = (async () => {
    try {
      pages: for await (const page of sub.batches()) {
        for (const e of page) {
          if (stopped) break pages;
          if (!wanted.has(e)) {
            const last = inFlight[inFlight.length - 1];
            if (!last) position = e.position;
            else if (last.finished) last.position = e.position;
            else inFlight.push({ position: e.position, finished: true, done: Promise.resolve() });
            continue;
          }
          const entry = { position: e.position, finished: false, done: Promise.resolve() };
          // A handler given up on at stop leaves its event unpassed: the next start handles it again.
          running++;
          entry.done = run(e).then(
            () => {
              entry.finished = true;
              advance();
            },
            () => undefined,
          );
          inFlight.push(entry);
          while (running >= concurrency) await new Promise<void>((r) => (slotFreed = r));
          slotFreed = null;
          if (stopped) break pages;
        }
      }
    } catch (err) {
      if (!stopped) ctx.logger.error({ err, worker: name }, 'worker stopped: event subscription failed');
    }
    await Promise.all(inFlight.map((x) => x.done));
  })();
  return {
    get position() {
      return position;
    },
    async stop() {
      stopped = true;
      if (saveTimer) clearTimeout(saveTimer);
      saveTimer = null;
      sub.close();
      await loop;
      save();
      await saving;
    },
  };
}
