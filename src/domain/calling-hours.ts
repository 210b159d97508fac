/**
 * Calling hours (CONTRACT section 15): a daily window of wall-clock time in a service's timezone,
 * `from` inclusive, `to` exclusive; `from` later than `to` spans midnight. Pure: the instant and the
 * zone in, an answer out. Daylight-saving changes are followed by the zone's own offsets, so a window
 * opens at its wall-clock time on either side of a change, at the change itself when its `from` falls
 * into the hour the clocks skip, and a second time when the clocks fall back over it.
 */
import { wallClock } from './time.js';

export interface CallingHours {
  /** `HH:MM`, 24-hour. */
  from: string;
  /** `HH:MM`, 24-hour. */
  to: string;
}

const HHMM_RE = /^([01]\d|2[0-3]):([0-5]\d)$/;
const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

const mod = (a: number, n: number) => ((a % n) + n) % n;

/** Minutes after midnight of an `HH:MM` (24-hour) time, or null when it is not one. */
export function parseHHMM(s: unknown): number | null {
  if (typeof s !== 'string') return null;
  const m = HHMM_RE.exec(s);
  return m ? Number(m[1]) * 60 + Number(m[2]) : null;
}

/** What is wrong with calling hours, naming the part (`from`, `to`), or null when they are valid. */
export function callingHoursProblem(h: { from?: unknown; to?: unknown }): string | null {
  const from = parseHHMM(h.from);
  if (from === null) return `from ${JSON.stringify(h.from ?? null)} must be HH:MM, 24-hour (00:00 to 23:59)`;
  const to = parseHHMM(h.to);
  if (to === null) return `to ${JSON.stringify(h.to ?? null)} must be HH:MM, 24-hour (00:00 to 23:59)`;
  // An empty window and a whole day are both better said otherwise (no calling hours at all).
  if (from === to) return `from must differ from to (both ${h.from})`;
  return null;
}

/** The zone's offset from UTC at an instant, in ms (whole seconds: what the zone database holds). */
function utcOffset(timeZone: string, at: number): number {
  const [date, time] = wallClock(at, timeZone);
  const [y, mo, d] = date.split('-').map(Number) as [number, number, number];
  const [h, mi, s] = time.split(':').map(Number) as [number, number, number];
  return Date.UTC(y, mo - 1, d, h, mi, s) - Math.floor(at / 1000) * 1000;
}

function parseWindow(hours: CallingHours): { from: number; to: number } {
  const from = parseHHMM(hours.from);
  const to = parseHHMM(hours.to);
  if (from === null || to === null) throw new Error(`invalid calling hours ${JSON.stringify(hours)}`);
  return { from, to };
}

function openAtLocal(w: { from: number; to: number }, localMs: number): boolean {
  const minute = Math.floor(mod(localMs, DAY) / MINUTE);
  return w.from < w.to ? minute >= w.from && minute < w.to : minute >= w.from || minute < w.to;
}

/** Whether calls may be placed at `at` (epoch ms). No calling hours: always. */
export function isWithinCallingHours(hours: CallingHours | null | undefined, timeZone: string, at: number): boolean {
  if (!hours) return true;
  return openAtLocal(parseWindow(hours), at + utcOffset(timeZone, at));
}

/** The first instant at or after `at` inside the calling hours: `at` itself when it is inside. */
export function nextOpening(hours: CallingHours | null | undefined, timeZone: string, at: number): number {
  if (!hours) return at;
  const w = parseWindow(hours);
  let t = at;
  // Each turn either finds the opening or moves past one offset change; zones change at most twice a year.
  for (let turn = 0; turn < 8; turn++) {
    const offset = utcOffset(timeZone, t);
    if (openAtLocal(w, t + offset)) return t;
    // On this offset, local time reaches `from` after this long (under a day: t is outside the window).
    const candidate = t + mod(w.from * MINUTE - (t + offset), DAY);
    if (utcOffset(timeZone, candidate) === offset) return candidate;
    t = offsetChange(timeZone, t, candidate, offset);
  }
  throw new Error(`no opening of ${JSON.stringify(hours)} in ${timeZone} found after ${at}`);
}

/** The first instant in (lo, hi] whose offset is not `offset` (the zone's offset at lo differs at hi). */
function offsetChange(timeZone: string, lo: number, hi: number, offset: number): number {
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (utcOffset(timeZone, mid) === offset) lo = mid;
    else hi = mid;
  }
  return hi;
}
