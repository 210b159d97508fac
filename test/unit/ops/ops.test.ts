import { describe, expect, it } from 'vitest';
import { Readiness } from '../../../src/ops/readiness.js';
import { randomBytes } from 'node:crypto';
import { CursorCodec } from '../../../src/domain/cursor.js';
import { PlatformMetrics } from '../../../src/ops/metrics.js';
import { todayCounters, type CallOutcomeDoc } from '../../../src/projections/call-outcomes.js';

describe('readiness', () => {
  it('is not ready until the read models reach the log head of the start, then stays caught up', async () => {
    let at = 3;
    const r = new Readiness({ startHead: 10, projectedPosition: async () => at, stores: {} });
    expect(await r.check()).toEqual({ ready: false, reason: 'read models at position 3 of 10 (catching up with the log)' });
    at = 10;
    expect(await r.check()).toEqual({ ready: true });
    // A later burst of events behind the projector does not take the process out of rotation.
    at = 0;
    expect(await r.check()).toEqual({ ready: true });
  });

  it('is not ready while a store fails or does not answer in time, and ready again after', async () => {
    let down: 'fail' | 'hang' | null = 'fail';
    const r = new Readiness({
      startHead: 0,
      projectedPosition: async () => 0,
      stores: {
        'event store': async () => {
          if (down === 'fail') throw new Error('SQLITE_CANTOPEN');
          if (down === 'hang') await new Promise(() => {});
        },
      },
      timeoutMs: 30,
    });
    expect(await r.check()).toEqual({ ready: false, reason: 'event store: SQLITE_CANTOPEN' });
    down = 'hang';
    expect(await r.check()).toEqual({ ready: false, reason: 'event store: event store did not answer within 30 ms' });
    down = null;
    expect(await r.check()).toEqual({ ready: true });
  });
});

describe('live event cursors', () => {
  const key = randomBytes(32);
  const cursors = new CursorCodec(key);
  it('decode on their own service only, and only in the form they were given', () => {
    const c = cursors.encode(101, 4711);
    expect(cursors.decode(101, c)).toBe(4711);
    expect(new CursorCodec(Buffer.from(key)).decode(101, c)).toBe(4711);
    expect(cursors.decode(102, c)).toBeNull();
    expect(cursors.decode(101, cursors.encode(101, Number.MAX_SAFE_INTEGER))).toBe(Number.MAX_SAFE_INTEGER);
    const [pos, mac] = c.split('.') as [string, string];
    const flipped = mac.slice(0, -2) + (mac.at(-2) === 'A' ? 'B' : 'A') + mac.at(-1);
    for (const bad of ['', '4711', 'not a cursor', c + '=', `0${pos}.${mac}`, `${(4712).toString(36)}.${mac}`, `${pos}.${flipped}`, `${pos.toUpperCase()}.${mac}`, 'x'.repeat(65)]) {
      expect(cursors.decode(101, bad), bad).toBeNull();
    }
  });

  it('cannot be made without the key: the unsigned form, and another deployment\'s, are refused', () => {
    expect(cursors.decode(101, Buffer.from('101.4711').toString('base64url'))).toBeNull();
    expect(cursors.decode(101, new CursorCodec(randomBytes(32)).encode(101, 4711))).toBeNull();
    expect(cursors.encode(101, 4711).length).toBeLessThanOrEqual(64);
    expect(cursors.encode(101, Number.MAX_SAFE_INTEGER).length).toBeLessThanOrEqual(64);
  });
});

describe("wallboard's today counters", () => {
  const doc = (over: Partial<CallOutcomeDoc>): CallOutcomeDoc => ({ svcId: 101, day: '2026-11-24', direction: 'Inbound', queuedAt: null, answeredAt: null, disposition: null, ...over });
  it('count dispositions, and the service level over queued callers whose outcome is known', () => {
    const now = 100_000;
    const docs = [
      doc({ direction: 'Outbound', answeredAt: 1, disposition: 'answered' }),
      doc({ queuedAt: 1_000, answeredAt: 11_000, disposition: 'answered' }), // within 20 s
      doc({ queuedAt: 1_000, answeredAt: 31_000 }), // answered late, still talking
      doc({ queuedAt: 1_000, disposition: 'missed' }), // gave up
      doc({ queuedAt: 95_000 }), // waiting 5 s: not decided yet
      doc({ queuedAt: 50_000 }), // waiting 50 s: already a miss
      doc({ direction: 'Outbound', disposition: 'missed' }),
    ];
    expect(todayCounters(docs, now)).toEqual({ answered: 2, missed: 2, serviceLevel: 25 });
    expect(todayCounters([doc({ queuedAt: 99_000 })], now)).toEqual({ answered: 0, missed: 0, serviceLevel: null });
    expect(todayCounters([doc({ queuedAt: 0, answeredAt: 20_000 }), doc({ queuedAt: 0, answeredAt: 20_001 }), doc({ queuedAt: 0, answeredAt: 5 })], now).serviceLevel).toBe(66.7);
  });
});

describe('request metrics', () => {
  it('render as a Prometheus counter and a cumulative histogram by method, route and status', async () => {
    const m = new PlatformMetrics({ defaultMetrics: false });
    m.observeRequest('GET', '/api/v1/ping', 200, 0.0004);
    m.observeRequest('GET', '/api/v1/ping', 200, 0.02);
    m.observeRequest('GET', '/api/v1/ping', 200, 30);
    m.observeRequest('POST', '/api/v1/calls', 409, 0.003);
    const text = await m.render();
    const ping = 'method="GET",route="/api/v1/ping",status_code="200"';
    expect(text).toContain('# TYPE http_requests_total counter');
    expect(text).toContain(`http_requests_total{${ping}} 3`);
    expect(text).toContain('http_requests_total{method="POST",route="/api/v1/calls",status_code="409"} 1');
    expect(text).toContain('# TYPE http_request_duration_seconds histogram');
    expect(text).toContain(`http_request_duration_seconds_bucket{${ping},le="0.001"} 1`);
    expect(text).toContain(`http_request_duration_seconds_bucket{${ping},le="0.025"} 2`);
    expect(text).toContain(`http_request_duration_seconds_bucket{${ping},le="10"} 2`);
    expect(text).toContain(`http_request_duration_seconds_bucket{${ping},le="+Inf"} 3`);
    expect(text).toContain(`http_request_duration_seconds_count{${ping}} 3`);
    expect(text).toMatch(new RegExp(`http_request_duration_seconds_sum\\{${ping.replace(/[/.]/g, '\\$&')}\\} 30\\.0204`));
  });
});
