import { describe, expect, it } from 'vitest';
import { dayOf, summaryTime, wallClock, webhookTime } from '../../src/domain/time.js';

/** What Intl says, field by field: the reference the cached formatting must agree with. */
function reference(epochMs: number, timeZone: string): [string, string] {
  const f = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });
  const p = Object.fromEntries(f.formatToParts(new Date(epochMs)).map((x) => [x.type, x.value]));
  return [`${p.year}-${p.month}-${p.day}`, `${p.hour}:${p.minute}:${p.second}`];
}

describe('wall-clock times', () => {
  const zones = ['UTC', 'Asia/Kolkata', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kathmandu', 'Pacific/Chatham'];

  it('agree with Intl to the second, whichever instants come in whichever order', () => {
    // Seconds across minute, day and DST boundaries (New York 2026-03-08 and 2026-11-01, Lord Howe's half hour), shuffled.
    const base = [Date.UTC(2026, 2, 8, 6, 59, 0), Date.UTC(2026, 10, 1, 5, 59, 0), Date.UTC(2026, 3, 4, 14, 59, 0), Date.UTC(2026, 11, 31, 23, 59, 0), Date.UTC(2024, 1, 29, 18, 29, 0)];
    const instants = base.flatMap((t) => Array.from({ length: 150 }, (_, i) => t + i * 997));
    let seed = 7;
    for (let i = instants.length - 1; i > 0; i--) {
      seed = (seed * 48271) % 2147483647;
      const j = seed % (i + 1);
      [instants[i], instants[j]] = [instants[j]!, instants[i]!];
    }
    for (const tz of zones) for (const t of instants) expect(wallClock(t, tz), `${tz} ${t}`).toEqual(reference(t, tz));
  });

  it('formats an offset with seconds (local mean time) to the second', () => {
    // Kolkata kept +05:53:28 until 1942: a UTC minute does not start on a local minute there.
    const t = Date.UTC(1900, 0, 1, 12, 0, 30);
    for (const ms of [t, t + 1000, t + 29_000, t + 31_000]) expect(wallClock(ms, 'Asia/Kolkata')).toEqual(reference(ms, 'Asia/Kolkata'));
  });

  it('gives the contract formats', () => {
    const t = Date.UTC(2026, 10, 27, 18, 30, 5); // 00:00:05 on the 28th in Kolkata
    expect(dayOf(t, 'Asia/Kolkata')).toBe('2026-11-28');
    expect(webhookTime(t, 'Asia/Kolkata')).toBe('2026-11-28 00:00:05');
    expect(summaryTime(t, 'Asia/Kolkata')).toBe('2026-11-2800:00:05');
  });
});
