/**
 * The readings behind a queue's alerts (CONTRACT section 17), as pure functions of what waits and
 * what entered the queue: the longest wait against `maxWaitS`, and the service level of the last
 * 15 minutes (answered within 20 s of entering; at least 5 entered) against `serviceLevelTarget`.
 */
import type { QueueDef } from './events.js';

export type AlertReason = 'wait' | 'serviceLevel';

/** What the queue reads now for one reason: in alert or not, with the value and the threshold. */
export interface AlertReading {
  reason: AlertReason;
  on: boolean;
  value: number;
  threshold: number;
}

export const SL_WINDOW_MS = 15 * 60 * 1000;
export const SL_SECONDS = 20;
export const SL_MIN_ENTERED = 5;

/** A caller who entered the queue: when, when an agent answered (null: not yet or never), and whether its call is over. */
export interface QueueEntry {
  queuedAt: number;
  answeredAt: number | null;
  ended: boolean;
}

const round1 = (n: number) => Math.round(n * 10) / 10;
/** Waits round up to the tenth: a queue in alert (waited longer than `maxWaitS`) never reads its threshold or less. */
const ceil1 = (ms: number) => Math.ceil(ms / 100) / 10;

/** The service level (percent, one decimal) of the entries that entered in the last 15 minutes; null below 5 entered or none decided yet. */
export function recentServiceLevel(entries: readonly QueueEntry[], now: number): number | null {
  const recent = entries.filter((e) => e.queuedAt > now - SL_WINDOW_MS && e.queuedAt <= now);
  if (recent.length < SL_MIN_ENTERED) return null;
  const target = SL_SECONDS * 1000;
  let decided = 0;
  let met = 0;
  for (const e of recent) {
    if (e.answeredAt !== null) {
      decided++;
      if (e.answeredAt - e.queuedAt <= target) met++;
    } else if (e.ended || now - e.queuedAt > target) decided++; // gone, or waiting past the target: not met
  }
  return decided === 0 ? null : round1((met / decided) * 100);
}

/** The queue's readings now, one per alert it has configured. `waitingSince`: when each caller waiting in it joined. */
export function queueReadings(q: QueueDef, waitingSince: readonly number[], entries: readonly QueueEntry[], now: number): AlertReading[] {
  const out: AlertReading[] = [];
  if (q.maxWaitS !== undefined) {
    const longest = waitingSince.reduce((m, since) => Math.max(m, now - since), 0);
    out.push({ reason: 'wait', on: longest > q.maxWaitS * 1000, value: ceil1(longest), threshold: q.maxWaitS });
  }
  if (q.serviceLevelTarget !== undefined) {
    const sl = recentServiceLevel(entries, now);
    out.push({ reason: 'serviceLevel', on: sl !== null && sl < q.serviceLevelTarget, value: sl ?? 100, threshold: q.serviceLevelTarget });
  }
  return out;
}
