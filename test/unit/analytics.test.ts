/** The analytics fold without a server: local intervals, login spans over midnight, CSV safety, bounded time travel. */
import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { parse } from 'csv-parse/sync';
import { intervalStarts, nextStart, splitSpan, startOf } from '../../src/domain/zone.js';
import { AnalyticsStore, emptyWrite } from '../../src/analytics/store.js';
import { AnalyticsModel, SNAPSHOT_EVERY } from '../../src/analytics/model.js';
import { exportStream, neutralise, type ExportRow } from '../../src/analytics/export.js';
import { docOf } from '../../src/analytics/timeline.js';
import { RecentIntervals } from '../../src/analytics/intervals.js';
import { timelineStateAt } from '../../src/analytics/queries.js';
import { SqliteEventStore } from '../../src/gateways/event-store/sqlite.js';
import type { RecordedEvent } from '../../src/gateways/event-store/port.js';

const H = 3_600_000;

describe('local intervals', () => {
  it('hours of Asia/Kolkata start at hh:30 UTC; days at 18:30 UTC', () => {
    const t = Date.UTC(2026, 2, 10, 5, 10); // 10:40 IST
    expect(startOf(t, 'hour', 'Asia/Kolkata')).toBe(Date.UTC(2026, 2, 10, 4, 30));
    expect(startOf(t, 'day', 'Asia/Kolkata')).toBe(Date.UTC(2026, 2, 9, 18, 30));
    expect(nextStart(Date.UTC(2026, 2, 9, 18, 30), 'day', 'Asia/Kolkata')).toBe(Date.UTC(2026, 2, 10, 18, 30));
  });

  it('a day of a DST change lasts 23 or 25 hours (Europe/Berlin)', () => {
    const spring = startOf(Date.UTC(2026, 2, 29, 12), 'day', 'Europe/Berlin');
    expect(spring).toBe(Date.UTC(2026, 2, 28, 23));
    expect(nextStart(spring, 'day', 'Europe/Berlin') - spring).toBe(23 * H);
    const autumn = startOf(Date.UTC(2026, 9, 25, 12), 'day', 'Europe/Berlin');
    expect(autumn).toBe(Date.UTC(2026, 9, 24, 22));
    expect(nextStart(autumn, 'day', 'Europe/Berlin') - autumn).toBe(25 * H);
    expect(intervalStarts(autumn, autumn + 25 * H, 'hour', 'Europe/Berlin')).toHaveLength(26);
  });

  it('a span is split at local midnights', () => {
    const parts: [number, number][] = [];
    splitSpan(Date.UTC(2026, 0, 1, 22), Date.UTC(2026, 0, 3, 1), 'day', 'UTC', (s, ms) => parts.push([s, ms]));
    expect(parts).toEqual([
      [Date.UTC(2026, 0, 1), 2 * H],
      [Date.UTC(2026, 0, 2), 24 * H],
      [Date.UTC(2026, 0, 3), 1 * H],
    ]);
  });

  it("the fold's remembered intervals are zone.ts's, across changes of offset, in zones of odd offsets, forward and back", () => {
    const zones = ['UTC', 'Asia/Kolkata', 'Asia/Kathmandu', 'Europe/Berlin', 'America/St_Johns', 'Australia/Lord_Howe', 'Pacific/Chatham', 'America/Sao_Paulo'];
    const from = Date.UTC(2025, 0, 1);
    // Times every 14 to 194 minutes over a year, with a step back now and then (a call's start asked after later events).
    let seed = 7;
    const next = () => (seed = (seed * 48271) % 2147483647);
    for (const zone of zones) {
      const recent = new RecentIntervals();
      let t = from;
      for (let i = 0; i < 5000; i++) {
        t += (14 + (next() % 181)) * 60_000;
        const asked = next() % 5 === 0 ? t - (next() % 180) * 60_000 : t;
        for (const unit of ['hour', 'day'] as const) {
          const start = startOf(asked, unit, zone);
          expect([zone, unit, asked, recent.startOf(asked, unit, zone)]).toEqual([zone, unit, asked, start]);
        }
        const spans: [number, number][] = [];
        recent.splitSpan(asked, asked + 5 * H, 'hour', zone, (s, ms) => spans.push([s, ms]));
        const expected: [number, number][] = [];
        splitSpan(asked, asked + 5 * H, 'hour', zone, (s, ms) => expected.push([s, ms]));
        expect(spans).toEqual(expected);
      }
    }
  });
});

let position = 0;
const ev = (streamId: string, type: string, data: Record<string, unknown>, time: number): RecordedEvent => ({
  id: String(++position),
  streamId,
  revision: 0,
  position,
  type,
  data,
  metadata: {},
  time,
});

const service = (time: number) =>
  ev('service-7', 'ServiceProvisioned', { svcId: 7, name: 'S', customer: 'c', timezone: 'UTC', dids: [], skills: [], queues: [], webhook: null, socketKey: null, blocked: [] }, time);
const agent = (time: number) => ev('agent-7-1', 'AgentProvisioned', { svcId: 7, agentId: 1, name: 'A', number: '9100000001', sip: 'a', countryCode: '91', skills: [] }, time);

describe('analytics fold', () => {
  const withStore = (fn: (store: AnalyticsStore) => void) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ct-analytics-unit-'));
    const store = new AnalyticsStore(path.join(dir, 'a.db'));
    try {
      fn(store);
    } finally {
      store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  };

  it('a login over midnight counts on both days; a break inside it counts by its code', () => {
    withStore((store) => {
      const m = new AnalyticsModel(store);
      const d0 = Date.UTC(2026, 0, 1);
      const ids = { svcId: 7, agentId: 1 };
      for (const e of [
        service(d0),
        agent(d0),
        ev('agent-7-1', 'AgentLoggedIn', { ...ids, time: d0 + 23 * H }, d0 + 23 * H),
        ev('agent-7-1', 'AgentBreakStarted', { ...ids, code: 3, time: d0 + 23.5 * H }, d0 + 23.5 * H),
        ev('agent-7-1', 'AgentBreakEnded', { ...ids, time: d0 + 24.25 * H }, d0 + 24.25 * H),
        ev('agent-7-1', 'AgentLoggedOut', { ...ids, time: d0 + 26 * H }, d0 + 26 * H),
      ])
        m.apply(e);
      m.flush();
      expect(store.agentDays(7, d0, d0 + 24 * H)).toEqual([{ agentId: 1, offered: 0, answered: 0, talkMs: 0, loginMs: H, breakMs: [0, 0, 0, H / 2, 0, 0, 0] }]);
      expect(store.agentDays(7, d0 + 24 * H, d0 + 48 * H)[0]).toMatchObject({ loginMs: 2 * H, breakMs: [0, 0, 0, H / 4, 0, 0, 0] });
      expect(store.agentOpen(7)).toEqual([{ svcId: 7, agentId: 1, timezone: 'UTC', loginSince: null, breakCode: null, breakSince: null }]);
    });
  });

  it('a write of many rows stores each once and adds to rows stored; a write refused midway stores none of its rows, its retry all', () => {
    withStore((store) => {
      // More rows of each kind than one statement takes (the store writes many rows a statement).
      const write = (from: number, position: number, badHour = -1) => {
        const w = emptyWrite(from);
        w.position = position;
        for (let i = 0; i < 150; i++) w.calls.push({ svcId: 7, startTime: 1000 + i, xnid: `x${i}`, row: `{"n":${i}}` });
        for (let h = 0; h < 70; h++) {
          const waits = new Map<number, number>();
          for (let sec = 0; sec < 3; sec++) waits.set(sec, h + 1);
          w.serviceHours.set(`7|${h}`, { svcId: 7, hourStart: h * H, d: { inbound: (h === badHour ? null : 1) as number, outbound: 0, answered: 1, missed: 0, abandoned: 0, entered: 1, waited: 1, waitMs: h, waits } });
        }
        for (let a = 0; a < 100; a++) w.agentDays.set(`7|${a}|0`, { svcId: 7, agentId: a, dayStart: 0, d: { offered: 1, answered: a, talkMs: 0, loginMs: 0, breakMs: [0, 0, 0, 0, 0, 0, 0] } });
        return w;
      };
      // A row the store refuses (NOT NULL) among the hours, after every call and some waits: the whole write is undone.
      expect(() => store.write(write(0, 10, 63))).toThrow(/NOT NULL/);
      expect(store.checkpoint()).toBe(0);
      expect(store.countCalls(7, 0, 1e6)).toBe(0);
      store.write(write(0, 10));
      store.write(write(10, 20));
      expect(store.checkpoint()).toBe(20);
      expect(store.countCalls(7, 0, 1e6)).toBe(150);
      expect([...store.callRows(7, 0, 1e6)].slice(0, 2)).toEqual(['{"n":0}', '{"n":1}']);
      const { rows, waits } = store.serviceHours(7, 0, 70 * H);
      expect(rows).toHaveLength(70);
      expect(rows[69]).toMatchObject({ hourStart: 69 * H, inbound: 2, waited: 2, waitMs: 138 });
      expect(waits).toHaveLength(210);
      for (const r of waits) expect(r.calls).toBe(2 * (r.hourStart / H + 1));
      const days = store.agentDays(7, 0, 1);
      expect(days).toHaveLength(100);
      expect(days.find((d) => d.agentId === 99)).toMatchObject({ offered: 2, answered: 198 });
    });
  });

  it('refuses a write when another process moved the checkpoint (no double counting)', () => {
    withStore((store) => {
      const a = new AnalyticsModel(store);
      const b = new AnalyticsModel(store);
      const e = service(0);
      a.apply(e);
      b.apply(e);
      a.flush();
      expect(() => b.flush()).toThrow(/checkpoint moved/);
    });
  });

  it('time travel reads at most SNAPSHOT_EVERY events of the log, whatever the age of the instant or the length of the log', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ct-analytics-unit-'));
    const store = new AnalyticsStore(path.join(dir, 'a.db'));
    let clock = 0;
    const events = new SqliteEventStore(':memory:', () => clock);
    try {
      const m = new AnalyticsModel(store);
      const append = async (streamId: string, type: string, data: Record<string, unknown>) => {
        await events.appendToStream(streamId, [{ type, data }]);
      };
      await append('service-7', 'ServiceProvisioned', service(0).data as Record<string, unknown>);
      await append('agent-7-1', 'AgentProvisioned', agent(0).data as Record<string, unknown>);
      const n = SNAPSHOT_EVERY * 10 + 17;
      const ids = { svcId: 7, agentId: 1 };
      for (let i = 1; i <= n; i++) {
        clock = i * 1000;
        await append('agent-7-1', i % 2 ? 'AgentLoggedIn' : 'AgentLoggedOut', { ...ids, time: clock });
        // Another tenant's events in between: they are read, never folded.
        await append('agent-8-1', 'AgentLoggedIn', { svcId: 8, agentId: 1, time: clock });
      }
      for (const e of await events.readAll()) m.apply(e);
      m.flush();
      for (const t of [0, 500, 1000, 2000, 150_500, 7_777_000, n * 1000]) {
        const { state, read } = await timelineStateAt(store, events, 7, t);
        expect(read).toBeLessThanOrEqual(SNAPSHOT_EVERY);
        const i = Math.floor(t / 1000);
        expect(docOf<{ status: number }>(state, 'agents', '7-1')!.status).toBe(i % 2 ? 0 : 2);
      }
      // A restarted fold resumes its timelines from the last snapshot and the log after it.
      const again = new AnalyticsModel(store);
      await again.load(events);
      clock += 1000;
      await append('agent-7-1', 'AgentBreakStarted', { ...ids, code: 4, time: clock });
      for (const e of await events.readAll({ after: again.position })) again.apply(e);
      again.flush();
      expect(store.checkpoint()).toBe(await events.headPosition());
    } finally {
      await events.close();
      store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('export formats', () => {
  const row = (over: Partial<ExportRow>): ExportRow => ({
    callid: 'x',
    'call-duration': '1',
    'agent-number': '',
    'customer-number': '+919876543210',
    'end-time': '2026-01-01 00:00:01',
    'start-time': '2026-01-01 00:00:00',
    'recording-url': null,
    'call-type': 'incoming',
    'virtual-number': '8000000101',
    disposition: 'missed',
    'svc-id': 7,
    'agent-id': null,
    'ivr-data': '',
    ...over,
  });
  const text = async (s: Readable) => {
    let out = '';
    for await (const c of s) out += c;
    return out;
  };

  it('neutralises cells a spreadsheet would run as a formula', () => {
    expect(['=1+2', '+91', '-3', '@SUM(A1)', '\tx', '\rx', 'ok', ''].map(neutralise)).toEqual(["'=1+2", "'+91", "'-3", "'@SUM(A1)", "'\tx", "'\rx", 'ok', '']);
  });

  it('CSV: header, RFC 4180 quoting, null as an empty cell, formula-looking cells prefixed', async () => {
    const csv = await text(exportStream([row({ 'ivr-data': '=HYPERLINK("x")', 'agent-number': 'a,b' })], 'csv'));
    expect(csv.startsWith('callid,call-duration,')).toBe(true);
    const [header, values] = parse(csv) as string[][];
    expect(header).toHaveLength(13);
    expect(values![header!.indexOf('ivr-data')]).toBe(`'=HYPERLINK("x")`);
    expect(values![header!.indexOf('customer-number')]).toBe("'+919876543210");
    expect(values![header!.indexOf('agent-number')]).toBe('a,b');
    expect(values![header!.indexOf('agent-id')]).toBe('');
    expect(values![header!.indexOf('svc-id')]).toBe('7');
  });

  it('JSON of no rows is an empty array', async () => {
    expect(await text(exportStream([], 'json'))).toBe('[]');
    expect(await text(exportStream([], 'jsonl'))).toBe('');
  });
});
