/**
 * Interval boundaries in a service's timezone (reports: hours and days as the service's clock shows
 * them, so a day may last 23 or 25 hours and an hour may start at hh:30 UTC).
 */

const formatters = new Map<string, Intl.DateTimeFormat>();
const HOUR = 3_600_000;
const DAY = 86_400_000;
/** Offsets change on quarter-hour instants in every real zone: cache one offset per quarter hour. */
const QUARTER = 900_000;
const offsetCache = new Map<string, Map<number, number>>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      hourCycle: 'h23',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** Local time minus UTC, in ms, at the instant `t`. */
export function zoneOffset(t: number, timeZone: string): number {
  let cache = offsetCache.get(timeZone);
  if (!cache) offsetCache.set(timeZone, (cache = new Map()));
  const q = Math.floor(t / QUARTER);
  const hit = cache.get(q);
  if (hit !== undefined) return hit;
  const p: Record<string, number> = {};
  for (const part of formatter(timeZone).formatToParts(new Date(q * QUARTER))) if (part.type !== 'literal') p[part.type] = Number(part.value);
  const local = Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!, p.second!);
  const offset = local - q * QUARTER;
  if (cache.size > 50_000) cache.clear();
  cache.set(q, offset);
  return offset;
}

/** The UTC instant at which the local wall clock shows `local` (ms of a local date-time read as UTC). */
function fromLocal(local: number, timeZone: string, hint: number): number {
  const u0 = local - zoneOffset(hint, timeZone);
  const u1 = local - zoneOffset(u0, timeZone);
  // A local time skipped by a DST change does not exist: the instant the clock jumped is meant.
  return u1 + zoneOffset(u1, timeZone) === local ? u1 : u0;
}

export type Interval = 'hour' | 'day';

const startCache = new Map<string, Map<number, number>>();

/**
 * Start of the local hour or day containing `t`. Offsets of real zones are whole quarter hours, so
 * each UTC quarter hour lies in one local hour and day: the answer is cached per quarter.
 */
export function startOf(t: number, unit: Interval, timeZone: string): number {
  let cache = startCache.get(timeZone);
  if (!cache) startCache.set(timeZone, (cache = new Map()));
  const key = Math.floor(t / QUARTER) * 2 + (unit === 'day' ? 1 : 0);
  const hit = cache.get(key);
  if (hit !== undefined && hit <= t) return hit;
  const start = computeStart(t, unit, timeZone);
  if (cache.size > 100_000) cache.clear();
  cache.set(key, start);
  return start;
}

function computeStart(t: number, unit: Interval, timeZone: string): number {
  const local = t + zoneOffset(t, timeZone);
  const size = unit === 'hour' ? HOUR : DAY;
  const start = fromLocal(local - (((local % size) + size) % size), timeZone, t);
  // The jump hint can overshoot around a DST change; never return a start after t.
  return start > t ? computeStart(start - 1, unit, timeZone) : start;
}

/** Start of the local hour or day after the one starting at `start`. */
export function nextStart(start: number, unit: Interval, timeZone: string): number {
  // Jump past the end (a day lasts at most 25 h, an hour of wall clock at most 2 h of real time), then align.
  const guess = startOf(start + (unit === 'hour' ? HOUR : DAY) + HOUR / 2, unit, timeZone);
  return guess > start ? guess : startOf(start + (unit === 'hour' ? 2 * HOUR : DAY + 2 * HOUR), unit, timeZone);
}

/** Boundaries of the intervals covering [from, to), widened to whole intervals: [start0, start1, ..., end]. */
export function intervalStarts(from: number, to: number, unit: Interval, timeZone: string, max = Infinity): number[] {
  const out: number[] = [];
  let s = startOf(from, unit, timeZone);
  while (s < to) {
    out.push(s);
    if (out.length > max) break;
    s = nextStart(s, unit, timeZone);
  }
  out.push(s);
  return out;
}

/**
 * Splits [a, b) at local interval boundaries: calls `each(start, ms)` with the start of every
 * interval the span touches and how much of the span falls in it.
 */
export function splitSpan(a: number, b: number, unit: Interval, timeZone: string, each: (start: number, ms: number) => void): void {
  let s = startOf(a, unit, timeZone);
  let cur = a;
  while (cur < b) {
    const next = nextStart(s, unit, timeZone);
    const end = Math.min(b, next);
    each(s, end - cur);
    cur = end;
    s = next;
  }
}
