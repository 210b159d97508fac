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

/** The day an instant falls on in the timezone: `YYYY-MM-DD`. */
export const dayOf = (epochMs: number, timeZone: string) => wallClock(epochMs, timeZone)[0];

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
