/**
 * Local hours and days (domain/zone.ts) with the last one found remembered per zone: the fold asks
 * for the interval of nearly every call event, and the log's times move forward, so nearly every
 * question falls in the interval answered before and costs two comparisons.
 */
import { nextStart, startOf, type Interval } from '../domain/zone.js';

const HOUR = 3_600_000;
const DAY = 86_400_000;

export class RecentIntervals {
  private readonly last: Record<Interval, Map<string, [start: number, end: number]>> = { hour: new Map(), day: new Map() };

  /** [start, end) of the local interval containing `t`. */
  private interval(t: number, unit: Interval, timeZone: string): [number, number] {
    const known = this.last[unit].get(timeZone);
    if (known && t >= known[0] && t < known[1]) return known;
    let found: [number, number] | undefined;
    if (unit === 'hour') {
      // A local day of 24 hours has one offset throughout (a change of offset lengthens or shortens
      // it), so its hours are whole hours from its midnight: found without asking zone.ts, whose
      // answer for a new hour costs a few Intl look-ups (~0.2 s of a year's replay).
      const [dayStart, dayEnd] = this.interval(t, 'day', timeZone);
      if (dayEnd - dayStart === DAY) {
        const start = dayStart + Math.floor((t - dayStart) / HOUR) * HOUR;
        found = [start, start + HOUR];
      }
    }
    if (!found) {
      const start = startOf(t, unit, timeZone);
      found = [start, nextStart(start, unit, timeZone)];
    }
    this.last[unit].set(timeZone, found);
    return found;
  }

  startOf(t: number, unit: Interval, timeZone: string): number {
    return this.interval(t, unit, timeZone)[0];
  }

  /** zone.ts's `splitSpan`: [a, b) split at local interval boundaries. */
  splitSpan(a: number, b: number, unit: Interval, timeZone: string, each: (start: number, ms: number) => void): void {
    for (let cur = a; cur < b; ) {
      const [start, end] = this.interval(cur, unit, timeZone);
      const to = Math.min(b, end);
      each(start, to - cur);
      cur = to;
    }
  }
}
