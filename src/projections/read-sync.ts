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
  // All checkpoints in one query: on a networked store (MongoDB) one round trip per poll, not one per projection.
  const poll = (names: string[]) => async (position: number, timeoutMs = 10_000) => {
    const deadline = Date.now() + timeoutMs;
    while ((await reads.lowestCheckpoint(names)) < position) {
      if (Date.now() > deadline) throw unavailable(`read models did not reach position ${position} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, pollMs));
    }
  };
  const waitFor = poll(projectionNames);
  const waitForAll = poll([...projectionNames, ...laggingNames]);
  return {
    waitFor,
    caughtUp: async (timeoutMs) => waitFor(await events.headPosition(), timeoutMs),
    waitForAll,
    allCaughtUp: async (timeoutMs) => waitForAll(await events.headPosition(), timeoutMs),
  };
}
