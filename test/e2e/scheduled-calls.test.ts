import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { teamDoc } from '../support/fixtures.js';
import { eventually } from '../support/wait.js';
import { testClock } from '../support/clock.js';

async function scheduleStream(s: TestServer, number: string) {
  const all = await s.platform.ctx.events.readAll({ after: 0, maxCount: 1_000_000 });
  const scheduled = all.find((e) => e.type === 'CallScheduled' && (e.data as { number: string }).number === number);
  return scheduled ? s.platform.ctx.events.readStream(scheduled.streamId) : [];
}
const placedCalls = async (s: TestServer, number: string) =>
  (await s.platform.ctx.events.readAll({ after: 0, maxCount: 1_000_000 })).filter((e) => e.type === 'CallStarted' && (e.data as { customerNumber: string }).customerNumber === number);

describe('scheduled calls', () => {
  let s: TestServer;
  const clock = testClock();
  beforeAll(async () => {
    s = await startServer({ SIM_ANSWER_MS: '20', SIM_RING_TIMEOUT_MS: '100', SCHEDULE_RETRY_S: '0' }, { now: clock.now });
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() })).status).toBe(200);
    await s.api('/api/v1/agents?status=0&agent-number=9100001001', { method: 'PATCH' });
  });
  afterAll(async () => {
    await s.stop();
  });

  it('answers Success at once and places the call at its time (a controllable clock), not before', async () => {
    const at = clock.now() + 3_600_000;
    const res = await s.api('/api/v1/calls', { method: 'POST', form: { number: '9876511111', 'schedule-time': String(at) } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await res.text()).toBe('Success');
    // The job is in the queue, due in an hour of the platform's clock.
    const scheduleId = (await scheduleStream(s, '9876511111'))[0]!.streamId.slice('schedule-'.length);
    const job = await eventually(async () => s.platform.ctx.queue.getJob('scheduled-call', `${scheduleId}:1`), 'the job queued');
    expect(job.state).toBe('delayed');
    expect(await placedCalls(s, '9876511111')).toHaveLength(0);
    clock.advance(3_600_000);
    const [call] = await eventually(async () => {
      const c = await placedCalls(s, '9876511111');
      return c.length ? c : null;
    }, 'the scheduled call placed');
    const placedAt = (call!.data as { time: number }).time;
    expect(placedAt).toBeGreaterThanOrEqual(at);
    expect(placedAt).toBeLessThan(at + 1000);
    expect(call!.data).toMatchObject({ direction: 'Outbound', origin: 'schedule' });
  });

  it('a time in the past is placed at once; an unparsable one is 400', async () => {
    expect(await (await s.api('/api/v1/calls', { method: 'POST', form: { number: '9876522222', 'schedule-time': String(Date.now() - 60_000) } })).text()).toBe('Success');
    await eventually(async () => (await placedCalls(s, '9876522222')).length === 1, 'placed at once', 3000);
    const bad = await s.api('/api/v1/calls', { method: 'POST', form: { number: '9876522222', 'schedule-time': 'tomorrow' } });
    expect(bad.status).toBe(400);
    expect((await bad.json()).message).toContain('schedule-time');
  });

  it('a never-answering number is attempted max-tries times in all, then the schedule is exhausted', async () => {
    await s.api('/api/v1/calls', { method: 'POST', form: { number: '9876530000', 'schedule-time': String(Date.now()), 'max-tries': '3' } });
    const stream = await eventually(async () => {
      const events = await scheduleStream(s, '9876530000');
      return events.some((e) => e.type === 'ScheduledCallExhausted') ? events : null;
    }, 'the schedule exhausted', 15_000);
    expect(stream.map((e) => e.type)).toEqual(['CallScheduled', 'ScheduledAttemptPlaced', 'ScheduledAttemptPlaced', 'ScheduledAttemptPlaced', 'ScheduledCallExhausted']);
    expect(await placedCalls(s, '9876530000')).toHaveLength(3);
    // Each call's end says how it started: the follower reads nothing back.
    const ends = (await s.platform.ctx.events.readAll({ after: 0, maxCount: 1_000_000 })).filter((e) => e.type === 'CallEnded' && (e.data as { customerNumber: string }).customerNumber === '9876530000');
    expect(ends.map((e) => (e.data as { source: { kind: string; attempt: number } }).source)).toEqual([1, 2, 3].map((attempt) => expect.objectContaining({ kind: 'schedule', attempt })));
  });

  it('call ends stored before they said how the call started are followed up alike (from the CallStarted)', async () => {
    // What an older version stored: CallEnded without `source`.
    const store = s.platform.ctx.events as unknown as Record<string, (...args: any[]) => Promise<unknown>>;
    const strip = (e: { type: string; data: any }) =>
      e.type === 'CallEnded' && e.data.customerNumber === '9876540000' ? { ...e, data: Object.fromEntries(Object.entries(e.data).filter(([k]) => k !== 'source')) } : e;
    // On the adapter's own methods (ctx.events may be a proxy over the adapter, which calls these).
    const proto = Object.getPrototypeOf(store) as typeof store;
    const [many, one] = [proto.appendToStreams!, proto.appendToStream!];
    store.appendToStreams = function (this: unknown, appends: { events: any[] }[]) {
      return many.call(this, appends.map((a) => ({ ...a, events: a.events.map(strip) })));
    };
    store.appendToStream = function (this: unknown, stream: string, events: any[], options: unknown) {
      return one.call(this, stream, events.map(strip), options);
    };
    try {
      await s.api('/api/v1/calls', { method: 'POST', form: { number: '9876540000', 'schedule-time': String(Date.now()), 'max-tries': '2' } });
      const stream = await eventually(async () => {
        const events = await scheduleStream(s, '9876540000');
        return events.some((e) => e.type === 'ScheduledCallExhausted') ? events : null;
      }, 'the schedule exhausted', 15_000);
      expect(stream.map((e) => e.type)).toEqual(['CallScheduled', 'ScheduledAttemptPlaced', 'ScheduledAttemptPlaced', 'ScheduledCallExhausted']);
      const ends = (await s.platform.ctx.events.readAll({ after: 0, maxCount: 1_000_000 })).filter((e) => e.type === 'CallEnded' && (e.data as { customerNumber: string }).customerNumber === '9876540000');
      expect(ends).toHaveLength(2);
      for (const e of ends) expect(e.data).not.toHaveProperty('source');
    } finally {
      delete store.appendToStreams;
      delete store.appendToStream;
    }
  });

  it('an answered attempt ends the schedule', async () => {
    // Earlier tests' answered calls still hold the agent: end them first.
    for (const c of await s.platform.ctx.reads.find<{ xnid: string }>('calls', { ended: false })) await s.api('/api/v1/hangup', { method: 'POST', form: { xnid: c.xnid } });
    await eventually(async () => s.platform.callFlow!.openCalls === 0, 'no open calls');
    await s.api('/api/v1/calls', { method: 'POST', form: { number: '9876544444', 'schedule-time': String(Date.now()), 'max-tries': '3', 'agent-sip': 'asha' } });
    const call = await eventually(async () => (await placedCalls(s, '9876544444'))[0], 'placed');
    const xnid = (call.data as { xnid: string }).xnid;
    await eventually(async () => (await s.platform.ctx.events.readStream(`call-${xnid}`)).some((e) => e.type === 'CallBridged'), 'bridged');
    expect((call.data as { namedAgentId: number }).namedAgentId).toBe(1001);
    await s.api('/api/v1/hangup', { method: 'POST', form: { xnid } });
    const stream = await eventually(async () => {
      const events = await scheduleStream(s, '9876544444');
      return events.some((e) => e.type === 'ScheduledCallAnswered') ? events : null;
    }, 'answered recorded');
    expect(stream.filter((e) => e.type === 'ScheduledAttemptPlaced')).toHaveLength(1);
  });
});

describe('scheduled calls across a restart', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'ct-sched-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('a call scheduled before a restart is placed after it, exactly once', async () => {
    const first = await startServer({}, { dataDir });
    expect((await first.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() })).status).toBe(200);
    const at = Date.now() + 1200;
    expect(await (await first.api('/api/v1/calls', { method: 'POST', form: { number: '9876555555', 'schedule-time': String(at) } })).text()).toBe('Success');
    await first.stop({ keepData: true });
    const second = await startServer({}, { dataDir });
    try {
      await eventually(async () => (await placedCalls(second, '9876555555')).length === 1, 'placed after the restart');
      // Give a duplicate every chance to show up: wait until the call has ended, then look again.
      const xnid = ((await placedCalls(second, '9876555555'))[0]!.data as { xnid: string }).xnid;
      await eventually(async () => (await second.platform.ctx.events.readStream(`call-${xnid}`)).some((e) => e.type === 'CallEnded' || e.type === 'CallQueued'), 'call progressed');
      await second.platform.callFlow!.idle();
      expect(await placedCalls(second, '9876555555')).toHaveLength(1);
    } finally {
      await second.stop({ keepData: true });
    }
  });
});
