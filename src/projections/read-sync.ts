/**
 * Read-your-writes: a request waits until the read models have applied every event stored
 * before it arrived (CONTRACT section 2). In a process that runs the projector this is the
 * runner's own position; elsewhere the stored checkpoints are polled.
 *
 * The lagging read models (`Projection.lagging`: a dialer upload's contacts) run apart and requests
 * do not wait for them; their readers do, with `waitForAll` / `allCaughtUp`.
 */
import type { EventStore } from '../gateways/event-store/port.js';
import type { ReadStore } from '../gateways/read-store/port.js';
import type { ProjectionRunner } from './runner.js';
import { unavailable } from '../domain/errors.js';

export interface ReadSync {
  waitFor(position: number, timeoutMs?: number): Promise<void>;
  /** Waits until every event stored so far is applied. */
  caughtUp(timeoutMs?: number): Promise<void>;
  /** As `waitFor`, by the lagging read models too. */
  waitForAll(position: number, timeoutMs?: number): Promise<void>;
  /** As `caughtUp`, by the lagging read models too. */
  allCaughtUp(timeoutMs?: number): Promise<void>;
}

/** `lagging`: the runner of the lagging read models, when there are any. */
export function localReadSync(events: EventStore, runner: ProjectionRunner, lagging?: ProjectionRunner): ReadSync {
  const waitFor = (position: number, timeoutMs?: number) => runner.waitFor(position, timeoutMs);
  const waitForAll = async (position: number, timeoutMs?: number) => {
    await runner.waitFor(position, timeoutMs);
    if (lagging) await lagging.waitFor(position, timeoutMs);
  };
  return {
    waitFor,
    caughtUp: async (timeoutMs) => {
      const head = await events.headPosition();
      if (head > runner.position) await runner.waitFor(head, timeoutMs);
    },
    waitForAll,
    allCaughtUp: async (timeoutMs) => waitForAll(await events.headPosition(), timeoutMs),
  };
}

/** `laggingNames`: the lagging read models, which only `waitForAll` and `allCaughtUp` wait for. */
export function remoteReadSync(events: EventStore, reads: ReadStore, projectionNames: string[], laggingNames: string[] = [], pollMs = 20): ReadSync {
  const waitFor = sharedPoll(reads, projectionNames, pollMs);
  const waitForAll = laggingNames.length === 0 ? waitFor : sharedPoll(reads, [...projectionNames, ...laggingNames], pollMs);
  return {
    waitFor,
    caughtUp: async (timeoutMs) => waitFor(await events.headPosition(), timeoutMs),
    waitForAll,
    allCaughtUp: async (timeoutMs) => waitForAll(await events.headPosition(), timeoutMs),
  };
}

/**
 * Waits until the lowest checkpoint of `names` reaches a position. All checkpoints in one query (on a
 * networked store one round trip a poll, not one per projection), and one poll for every request of
 * the process that waits: one query at a time, however many wait. Each waiter is answered by a query
 * sent after it came (checkpoints can go back: a rebuild).
 */
function sharedPoll(reads: ReadStore, names: string[], pollMs: number): (position: number, timeoutMs?: number) => Promise<void> {
  type Waiter = { position: number; deadline: number; timeoutMs: number; resolve: () => void; reject: (err: unknown) => void };
  let waiting: Waiter[] = [];
  let asking = false;
  /** Waiters that came while a query was out: asked for again as soon as it answers, not a poll later. */
  let cameSince: Waiter[] = [];
  let timer: NodeJS.Timeout | null = null;
  const ask = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    asking = true;
    const asked = waiting;
    waiting = [];
    const settle = (position: number | null, err?: unknown) => {
      asking = false;
      const now = Date.now();
      for (const w of asked) {
        if (position === null) w.reject(err);
        else if (position >= w.position) w.resolve();
        else if (now > w.deadline) w.reject(unavailable(`read models did not reach position ${w.position} within ${w.timeoutMs} ms`));
        else waiting.push(w);
      }
      waiting.push(...cameSince);
      const soon = cameSince.length > 0;
      cameSince = [];
      if (soon) ask();
      else if (waiting.length > 0) timer = setTimeout(ask, pollMs);
    };
    reads.lowestCheckpoint(names).then(
      (position) => settle(position),
      (err: unknown) => settle(null, err),
    );
  };
  return (position: number, timeoutMs = 10_000) =>
    new Promise<void>((resolve, reject) => {
      const w = { position, deadline: Date.now() + timeoutMs, timeoutMs, resolve, reject };
      if (asking) cameSince.push(w);
      else {
        waiting.push(w);
        ask();
      }
    });
}
