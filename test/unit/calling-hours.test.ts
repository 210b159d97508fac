/** Calling hours: inside or not, and the next opening, across midnight and daylight-saving changes. */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { callingHoursProblem, isWithinCallingHours, nextOpening, parseHHMM } from '../../src/domain/calling-hours.js';

const at = (iso: string) => Date.parse(iso);
const NY = 'America/New_York';
const KOLKATA = 'Asia/Kolkata';

describe('calling hours validation', () => {
  it('takes HH:MM 24-hour times only', () => {
    expect(parseHHMM('00:00')).toBe(0);
    expect(parseHHMM('09:05')).toBe(545);
    expect(parseHHMM('23:59')).toBe(1439);
    for (const bad of ['24:00', '9:00', '09:60', '0900', '09:00:00', ' 09:00', '', null, 900]) expect(parseHHMM(bad)).toBeNull();
  });

  it('names the bad part; from == to is refused, from later than to is a window over midnight', () => {
    expect(callingHoursProblem({ from: '09:00', to: '21:00' })).toBeNull();
    expect(callingHoursProblem({ from: '22:00', to: '06:00' })).toBeNull();
    expect(callingHoursProblem({ from: '9am', to: '21:00' })).toMatch(/^from "9am" must be HH:MM/);
    expect(callingHoursProblem({ from: '09:00', to: '24:00' })).toMatch(/^to "24:00" must be HH:MM/);
    expect(callingHoursProblem({ to: '21:00' })).toMatch(/^from null must be/);
    expect(callingHoursProblem({ from: '09:00', to: '09:00' })).toBe('from must differ from to (both 09:00)');
  });
});

describe('isWithinCallingHours', () => {
  const day = { from: '09:00', to: '21:00' };
  it('is inside from `from` (inclusive) to `to` (exclusive), in the service timezone', () => {
    // 09:00 IST is 03:30 UTC.
    expect(isWithinCallingHours(day, KOLKATA, at('2026-06-01T03:29:59.999Z'))).toBe(false);
    expect(isWithinCallingHours(day, KOLKATA, at('2026-06-01T03:30:00Z'))).toBe(true);
    expect(isWithinCallingHours(day, KOLKATA, at('2026-06-01T15:29:59.999Z'))).toBe(true);
    expect(isWithinCallingHours(day, KOLKATA, at('2026-06-01T15:30:00Z'))).toBe(false);
    // The same instant in UTC would be inside.
    expect(isWithinCallingHours(day, 'UTC', at('2026-06-01T15:30:00Z'))).toBe(true);
  });

  it('spans midnight when from is later than to', () => {
    const night = { from: '22:00', to: '06:00' };
    expect(isWithinCallingHours(night, 'UTC', at('2026-06-01T21:59:00Z'))).toBe(false);
    expect(isWithinCallingHours(night, 'UTC', at('2026-06-01T22:00:00Z'))).toBe(true);
    expect(isWithinCallingHours(night, 'UTC', at('2026-06-02T00:00:00Z'))).toBe(true);
    expect(isWithinCallingHours(night, 'UTC', at('2026-06-02T05:59:59Z'))).toBe(true);
    expect(isWithinCallingHours(night, 'UTC', at('2026-06-02T06:00:00Z'))).toBe(false);
  });

  it('no calling hours: always inside', () => {
    expect(isWithinCallingHours(null, KOLKATA, at('2026-06-01T21:00:00Z'))).toBe(true);
    expect(nextOpening(undefined, KOLKATA, 123)).toBe(123);
  });
});

describe('nextOpening', () => {
  const day = { from: '09:00', to: '21:00' };

  it('is the instant itself inside the window, else the next `from` in the timezone', () => {
    expect(nextOpening(day, KOLKATA, at('2026-06-01T05:00:00Z'))).toBe(at('2026-06-01T05:00:00Z'));
    expect(nextOpening(day, KOLKATA, at('2026-06-01T01:00:00Z'))).toBe(at('2026-06-01T03:30:00Z'));
    // After closing: tomorrow's opening.
    expect(nextOpening(day, KOLKATA, at('2026-06-01T15:30:00Z'))).toBe(at('2026-06-02T03:30:00Z'));
    expect(nextOpening({ from: '22:00', to: '06:00' }, 'UTC', at('2026-06-01T06:00:00Z'))).toBe(at('2026-06-01T22:00:00Z'));
  });

  it('follows the offset on the day the clocks spring forward (New York, 8 March 2026)', () => {
    // The night before is EST (UTC-5); 09:00 that morning is EDT (UTC-4), i.e. 13:00 UTC, not 14:00.
    const evening = at('2026-03-08T03:00:00Z'); // Sat 7 March 22:00 EST
    expect(nextOpening(day, NY, evening)).toBe(at('2026-03-08T13:00:00Z'));
    expect(isWithinCallingHours(day, NY, at('2026-03-08T12:59:59Z'))).toBe(false);
    expect(isWithinCallingHours(day, NY, at('2026-03-08T13:00:00Z'))).toBe(true);
    // And closes at 21:00 EDT = 01:00 UTC the next day.
    expect(isWithinCallingHours(day, NY, at('2026-03-09T00:59:59Z'))).toBe(true);
    expect(isWithinCallingHours(day, NY, at('2026-03-09T01:00:00Z'))).toBe(false);
  });

  it('a `from` in the skipped hour opens when the clocks jump over it', () => {
    // 02:00 EST becomes 03:00 EDT at 07:00 UTC: 02:30 never happens that day.
    expect(nextOpening({ from: '02:30', to: '05:00' }, NY, at('2026-03-08T05:00:00Z'))).toBe(at('2026-03-08T07:00:00Z'));
  });

  it('falling back: 09:00 is an hour later in UTC, and an hour the clocks repeat opens twice', () => {
    // 1 November 2026: 02:00 EDT becomes 01:00 EST at 06:00 UTC.
    expect(nextOpening(day, NY, at('2026-11-01T02:00:00Z'))).toBe(at('2026-11-01T14:00:00Z'));
    const short = { from: '01:30', to: '01:40' };
    // 01:45 EDT (05:45 UTC) is past the first 01:30-01:40; the repeated hour brings 01:30 EST (06:30 UTC).
    expect(nextOpening(short, NY, at('2026-11-01T05:45:00Z'))).toBe(at('2026-11-01T06:30:00Z'));
  });

  it('property: the answer is inside the window and nothing before it (from the start) is', () => {
    const zones = ['UTC', KOLKATA, NY, 'Europe/London', 'Australia/Lord_Howe', 'Asia/Kathmandu', 'America/Sao_Paulo'];
    const hhmm = fc.tuple(fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 })).map(([h, m]) => `${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}`);
    fc.assert(
      fc.property(
        fc.constantFrom(...zones),
        hhmm,
        hhmm,
        fc.integer({ min: at('2024-01-01T00:00:00Z'), max: at('2028-01-01T00:00:00Z') }),
        (zone, from, to, start) => {
          fc.pre(from !== to);
          const hours = { from, to };
          const open = nextOpening(hours, zone, start);
          expect(open).toBeGreaterThanOrEqual(start);
          expect(open - start).toBeLessThanOrEqual(25 * 3600_000);
          expect(isWithinCallingHours(hours, zone, open)).toBe(true);
          if (open > start) {
            expect(isWithinCallingHours(hours, zone, open - 1)).toBe(false);
            for (let i = 0; i < 20; i++) expect(isWithinCallingHours(hours, zone, start + Math.floor(((open - start) * i) / 20))).toBe(false);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
