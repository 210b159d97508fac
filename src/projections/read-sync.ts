/**
 * Read-your-writes: a request waits until the read models have applied every event stored
 * before it arrived (CONTRACT section 2). In a process that runs the projector this is the
 * runner's own position; elsewhere the stored checkpoints are polled.
 */
import type { EventStore } from '../gateways/event-store/port.js';
import type { ReadStore } from '../gateways/read-store/port.js';
import type { ProjectionRunner } from './runner.js';
import { unavailable } from '../domain/errors.js';

export interface ReadSync {
  waitFor(position: number, timeoutMs?: number): Promise<void>;
  /** Waits until every event stored so far is applied. */
  caughtUp(timeoutMs?: number): Promise<void>;
}

export function localReadSync(events: EventStore, runner: ProjectionRunner): ReadSync {
  return {
    waitFor: (position, timeoutMs) => runner.waitFor(position, timeoutMs),
    caughtUp: async (timeoutMs) => {
      const head = await events.headPosition();
      if (head > runner.position) await runner.waitFor(head, timeoutMs);
    },
  };
}

export function remoteReadSync(events: EventStore, reads: ReadStore, projectionNames: string[], pollMs = 20): ReadSync {
  // All checkpoints in one query: on a networked store (MongoDB) one round trip per poll, not one per projection.
  const positionNow = () => reads.lowestCheckpoint(projectionNames);
  const waitFor = async (position: number, timeoutMs = 10_000) => {
    const deadline = Date.now() + timeoutMs;
    while ((await positionNow()) < position) {
      if (Date.now() > deadline) throw unavailable(`read models did not reach position ${position} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, pollMs));
    }
  };
  return {
    waitFor,
    caughtUp: async (timeoutMs) => waitFor(await events.headPosition(), timeoutMs),
  };
}
