/** Wall-clock formats of CONTRACT section 5, in a service's timezone. */

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-CA', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** [YYYY-MM-DD, HH:MM:SS] of an epoch ms in a timezone, from Intl (slow: a call's end formats several). */
function formatted(epochMs: number, timeZone: string): [string, string] {
  const parts: Record<string, string> = {};
  for (const p of formatter(timeZone).formatToParts(new Date(epochMs))) parts[p.type] = p.value;
  return [`${parts.year}-${parts.month}-${parts.day}`, `${parts.hour}:${parts.minute}:${parts.second}`];
}

/** Local date and HH:MM of UTC minutes lately formatted, by timezone and minute (a call's start and end). */
const minutes = new Map<string, { date: string; hm: string }>();
const MAX_MINUTES = 1024;

/**
 * [YYYY-MM-DD, HH:MM:SS] of an epoch ms in a timezone. Intl formats once per timezone and UTC minute:
 * with a whole-minute offset (every offset in use today) the instants of one UTC minute share its
 * local date and HH:MM, and differ only in seconds. An offset with seconds (local mean times before
 * ~1900) is formatted every time.
 */
export function wallClock(epochMs: number, timeZone: string): [string, string] {
  const minute = Math.floor(epochMs / 60_000);
  const key = `${minute} ${timeZone}`;
  let known = minutes.get(key);
  if (!known) {
    const [date, time] = formatted(minute * 60_000, timeZone);
    if (!time.endsWith(':00')) return formatted(epochMs, timeZone);
    if (minutes.size >= MAX_MINUTES) minutes.clear();
    known = { date, hm: time.slice(0, 5) };
    minutes.set(key, known);
  }
  const second = Math.floor(epochMs / 1000) - minute * 60;
  return [known.date, `${known.hm}:${second < 10 ? '0' : ''}${second}`];
}

/** The day an instant falls on in the timezone: `YYYY-MM-DD` (dashboards ask per request). */
export function dayOf(epochMs: number, timeZone: string): string {
  return wallClock(epochMs, timeZone)[0];
}

/** Call summary `time`: `YYYY-MM-DDHH:MM:SS`. */
export function summaryTime(epochMs: number, timeZone: string): string {
  const [d, t] = wallClock(epochMs, timeZone);
  return d + t;
}

/** Webhook times: `YYYY-MM-DD HH:MM:SS`. */
export function webhookTime(epochMs: number, timeZone: string): string {
  const [d, t] = wallClock(epochMs, timeZone);
  return `${d} ${t}`;
}
