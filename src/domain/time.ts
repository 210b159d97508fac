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

/** [YYYY-MM-DD, HH:MM:SS] of an epoch ms in a timezone. */
export function wallClock(epochMs: number, timeZone: string): [string, string] {
  const parts: Record<string, string> = {};
  for (const p of formatter(timeZone).formatToParts(new Date(epochMs))) parts[p.type] = p.value;
  return [`${parts.year}-${parts.month}-${parts.day}`, `${parts.hour}:${parts.minute}:${parts.second}`];
}

/** Per timezone, the last UTC minute asked for and its day (formatToParts is slow; dashboards ask per request). */
const dayOfMinute = new Map<string, { minute: number; day: string }>();

/** The day an instant falls on in the timezone: `YYYY-MM-DD`. */
export function dayOf(epochMs: number, timeZone: string): string {
  const minute = Math.floor(epochMs / 60_000);
  const known = dayOfMinute.get(timeZone);
  if (known?.minute === minute) return known.day;
  const [day, time] = wallClock(minute * 60_000, timeZone);
  // A whole-minute offset (every offset in use today) keeps the whole UTC minute on one local day.
  if (!time.endsWith(':00')) return wallClock(epochMs, timeZone)[0];
  dayOfMinute.set(timeZone, { minute, day });
  return day;
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
