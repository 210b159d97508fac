/**
 * Dialer compliance (CONTRACT section 15) on the real platform with the platform's clock under the
 * test's control: calling hours for the dialer and scheduled calls (and a daylight-saving day), dnd
 * and blocked numbers never dialled, a scheduled call to them refused with 409.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { ADMIN, GLOBEX, teamDoc } from '../support/fixtures.js';
import { testClock } from '../support/clock.js';
import { eventually } from '../support/wait.js';
import { heldJobId } from '../../src/workers/scheduler/scheduled-calls.js';

const startedCalls = async (s: TestServer, origin?: string) =>
  (await s.platform.ctx.events.readAll({ after: 0, maxCount: 1_000_000 }))
    .filter((e) => e.type === 'CallStarted' && (origin === undefined || (e.data as { origin: string }).origin === origin))
    .map((e) => e.data as { xnid: string; customerNumber: string; time: number; origin: string });

/** A clock set to `iso` before the platform starts (so nothing it stores runs backwards). */
function clockAt(iso: string) {
  const clock = testClock();
  clock.advance(Date.parse(iso) - clock.now());
  return { ...clock, to: (at: number) => clock.advance(at - clock.now()) };
}

async function schedule(s: TestServer, form: Record<string, string>, auth: [string, string] = ADMIN) {
  return s.api('/api/v1/calls', { method: 'POST', form, auth });
}

/** The id of the schedule of a number (from its CallScheduled event). */
async function scheduleId(s: TestServer, number: string): Promise<string> {
  const e = (await s.platform.ctx.events.readAll({ after: 0, maxCount: 1_000_000 })).find((x) => x.type === 'CallScheduled' && (x.data as { number: string }).number === number);
  return (e!.data as { id: string }).id;
}

async function uploadCsv(s: TestServer, svcId: number, campaignId: number, endTime: number, numbers: string[], auth: [string, string] = ADMIN) {
  const body = new FormData();
  body.set('svc-id', String(svcId));
  body.set('campaign-id', String(campaignId));
  body.set('end-time', String(endTime));
  body.set('file', new Blob([`name,phone\n${numbers.map((n, i) => `c${i},${n}`).join('\n')}\n`], { type: 'text/csv' }), 'contacts.csv');
  const res = await s.api('/api/v1/dialer', { method: 'POST', body, auth });
  expect(res.status).toBe(200);
}

const campaign = async (s: TestServer, svcId: number, campaignId: number) =>
  ((await (await s.ops(`/ops/v1/campaigns?svc-id=${svcId}`)).json()) as Array<Record<string, number>>).find((c) => c.campaignId === campaignId)!;

describe('calling hours, dnd and blocked numbers (Asia/Kolkata, 09:00-18:00)', () => {
  // 07:30 in Kolkata (UTC+05:30): before the window; it opens at 03:30 UTC and closes at 12:30 UTC.
  const clock = clockAt('2026-06-01T02:00:00Z');
  const opening = Date.parse('2026-06-01T03:30:00Z');
  const closing = Date.parse('2026-06-01T12:30:00Z');
  let s: TestServer;
  const doc = teamDoc();
  doc.services[0].callingHours = { from: '09:00', to: '18:00' };
  doc.services[0].customers.push({ number: '9876500001', name: 'Quiet', dnd: true }, { number: '+919876500002', name: 'Quiet too', dnd: true });

  beforeAll(async () => {
    s = await startServer({ SIM_ANSWER_MS: '20', SIM_RING_TIMEOUT_MS: '100', SIM_TALK_MS: '150', DIALER_RETRY_S: '0' }, { now: clock.now });
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: doc })).status).toBe(200);
    expect((await s.api('/api/v1/agents?status=0&agent-number=9100001001', { method: 'PATCH' })).status).toBe(200);
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('customer-details shows crm.dnd', async () => {
    const quiet = await (await s.api('/api/v1/customer-details?svc-id=101&customer-number=9876500001&detailed=true')).json();
    expect(quiet.crm.dnd).toBe(true);
    const ravi = await (await s.api('/api/v1/customer-details?svc-id=101&customer-number=9876543210&detailed=true')).json();
    expect(ravi.crm.dnd).toBe(false);
  });

  it('a scheduled call to a dnd or blocked number is 409 with the error body, whatever its spelling', async () => {
    for (const number of ['9876500001', '919876500002', '+919876500002', '9000000666', '+9000000666']) {
      const res = await schedule(s, { number, 'schedule-time': String(clock.now() + 60_000) });
      expect(res.status).toBe(409);
      const body = await res.json();
      expect(body).toMatchObject({ isError: true, code: 'CONFLICT' });
      expect(body.message).toContain(number);
    }
    expect((await s.platform.ctx.events.readAll({ after: 0, maxCount: 1_000_000 })).filter((e) => e.type === 'CallScheduled')).toHaveLength(0);
  });

  it('before the window: a direct POST /calls goes out at once; scheduled and dialer calls wait', async () => {
    const direct = await s.api('/api/v1/calls', { method: 'POST', form: { number: '9876511110' } });
    expect(direct.status).toBe(200);
    const { id } = await direct.json();
    // Let the direct call finish, so the agent is free again when the window opens.
    await eventually(async () => (await s.platform.ctx.events.readStream(`call-${id}`)).some((e) => e.type === 'CallEnded'), 'the direct call ended');

    expect(await (await schedule(s, { number: '9876511111', 'schedule-time': String(clock.now()) })).text()).toBe('Success');
    const sid = await scheduleId(s, '9876511111');
    // The attempt's job ran, found the window shut and moved itself to the opening.
    await eventually(async () => (await s.platform.ctx.queue.getJob('scheduled-call', `${sid}:1`))?.state === 'completed', 'the due job ran');
    expect((await s.platform.ctx.queue.getJob('scheduled-call', heldJobId(sid, 1, opening)))?.state).toBe('delayed');
    // Another, whose customer asks not to be called while it waits.
    expect(await (await schedule(s, { number: '9876511112', 'schedule-time': String(clock.now()) })).text()).toBe('Success');
    await eventually(async () => (await s.platform.ctx.queue.getJob('scheduled-call', heldJobId(await scheduleId(s, '9876511112'), 1, opening)))?.state === 'delayed', 'the second held');
    doc.services[0].customers.push({ number: '9876511112', dnd: true });
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: doc })).status).toBe(200);

    await uploadCsv(s, 101, 1, opening + 3600_000, ['9876522221', '9876500001', '9000000666', '9876522222', '+919876500002']);
    await eventually(async () => s.platform.dialer!.contactsPending === 5, 'the dialer knows the contacts');
    await s.platform.dialer!.paced();
    clock.to(opening - 1000);
    await s.platform.dialer!.paced();
    expect((await startedCalls(s)).map((c) => c.customerNumber)).toEqual(['9876511110']);
    expect(await campaign(s, 101, 1)).toMatchObject({ total: 5, pending: 5, dialled: 0, dnc: 0 });
  });

  it('at the opening both go out within a second; dnd and blocked contacts end skipped, never dialled', async () => {
    clock.to(opening);
    const [scheduled] = await eventually(async () => {
      const c = (await startedCalls(s, 'schedule')).filter((x) => x.customerNumber === '9876511111');
      return c.length ? c : null;
    }, 'the scheduled call placed');
    expect(scheduled!.time).toBeGreaterThanOrEqual(opening);
    expect(scheduled!.time).toBeLessThan(opening + 1000);
    const skipped = await eventually(async () => {
      const events = await s.platform.ctx.events.readStream(`schedule-${await scheduleId(s, '9876511112')}`);
      return events.at(-1)?.type === 'ScheduledCallSkipped' ? events : null;
    }, 'the schedule of a number now dnd ends skipped');
    expect(skipped.map((e) => e.type)).toEqual(['CallScheduled', 'ScheduledCallSkipped']);
    expect(skipped[1]!.data).toMatchObject({ reason: 'dnd', attempts: 0 });

    const first = await eventually(async () => (await startedCalls(s, 'dialer'))[0], 'the first dialer call');
    expect(first.time).toBeGreaterThanOrEqual(opening);
    expect(first.time).toBeLessThan(opening + 1000);

    // The scheduled call holds the only agent for a moment: end it so the dialer gets through its list.
    await s.api('/api/v1/hangup', { method: 'POST', form: { xnid: scheduled!.xnid } });
    const done = await eventually(async () => {
      const c = await campaign(s, 101, 1);
      return c.pending === 0 && s.platform.dialer!.callsInFlight === 0 ? c : null;
    }, 'the campaign done', 20_000);
    expect(done).toMatchObject({ total: 5, dialled: 2, answered: 2, dnc: 3, skipped: 0, pending: 0 });
    expect((await startedCalls(s, 'dialer')).map((c) => c.customerNumber).sort()).toEqual(['9876522221', '9876522222']);
    expect((await startedCalls(s)).map((c) => c.customerNumber)).not.toContain('9876511112');
    await s.platform.ctx.sync.allCaughtUp();
    const contacts = await s.platform.ctx.reads.find<{ number: string; status: string; skipReason?: string }>('campaign-contacts', { svcId: 101, campaignId: 1 });
    expect(Object.fromEntries(contacts.map((c) => [c.number, [c.status, c.skipReason ?? null]]))).toEqual({
      '9876522221': ['answered', null],
      '9876522222': ['answered', null],
      '9876500001': ['skipped', 'dnd'],
      '+919876500002': ['skipped', 'dnd'],
      '9000000666': ['skipped', 'blocked'],
    });
  });

  it('at the closing nothing more goes out until the next day opens', async () => {
    await s.platform.callFlow!.idle();
    clock.to(closing);
    await uploadCsv(s, 101, 2, closing + 48 * 3600_000, ['9876533331']);
    expect(await (await schedule(s, { number: '9876533332', 'schedule-time': String(closing) })).text()).toBe('Success');
    const sid = await scheduleId(s, '9876533332');
    const tomorrow = opening + 24 * 3600_000;
    await eventually(async () => (await s.platform.ctx.queue.getJob('scheduled-call', heldJobId(sid, 1, tomorrow)))?.state === 'delayed', 'held until tomorrow 09:00');
    await eventually(async () => s.platform.dialer!.contactsPending === 1, 'the dialer knows the contact');
    clock.to(tomorrow - 1000);
    await s.platform.dialer!.paced();
    const numbers = (await startedCalls(s)).map((c) => c.customerNumber);
    expect(numbers).not.toContain('9876533331');
    expect(numbers).not.toContain('9876533332');
    clock.to(tomorrow);
    const placed = await eventually(async () => {
      const placed = (await startedCalls(s)).filter((c) => c.customerNumber === '9876533331' || c.customerNumber === '9876533332');
      return placed.length === 2 ? placed : null;
    }, 'both calls placed at the next opening');
    for (const c of placed) {
      expect(c.time).toBeGreaterThanOrEqual(tomorrow);
      expect(c.time).toBeLessThan(tomorrow + 1000);
    }
  });
});

describe('calling hours on a daylight-saving day (America/New_York, 8 March 2026)', () => {
  // Saturday 22:00 EST. The clocks spring forward overnight: Sunday's 09:00 is EDT, 13:00 UTC (14:00 UTC the day before).
  const clock = clockAt('2026-03-08T03:00:00Z');
  const opening = Date.parse('2026-03-08T13:00:00Z');
  let s: TestServer;

  beforeAll(async () => {
    s = await startServer({ SIM_ANSWER_MS: '20', SIM_RING_TIMEOUT_MS: '100', SIM_TALK_MS: '150' }, { now: clock.now });
    const doc = teamDoc();
    Object.assign(doc.services[1], { timezone: 'America/New_York', callingHours: { from: '09:00', to: '21:00' } });
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: doc })).status).toBe(200);
    expect((await s.api('/api/v1/agents?status=0&agent-number=9200002001', { method: 'PATCH', auth: GLOBEX })).status).toBe(200);
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('nothing goes out overnight; at 09:00 EDT the scheduled call and the dialer start within a second', async () => {
    expect(await (await schedule(s, { number: '9876544441', 'schedule-time': String(clock.now()), 'service-id': '202' }, GLOBEX)).text()).toBe('Success');
    const sid = await scheduleId(s, '9876544441');
    await eventually(async () => (await s.platform.ctx.queue.getJob('scheduled-call', heldJobId(sid, 1, opening)))?.state === 'delayed', 'held until 09:00 EDT');
    await uploadCsv(s, 202, 1, opening + 3600_000, ['9876544442'], GLOBEX);
    await eventually(async () => s.platform.dialer!.contactsPending === 1, 'the dialer knows the contact');
    await s.platform.dialer!.paced();
    // 08:59:59 EDT: still shut (one hour past 09:00 on Saturday's offset).
    clock.to(opening - 1000);
    await s.platform.dialer!.paced();
    expect(await startedCalls(s)).toEqual([]);
    clock.to(opening);
    const placed = await eventually(async () => {
      const c = await startedCalls(s);
      return c.length === 2 ? c : null;
    }, 'both calls placed');
    for (const c of placed) {
      expect(c.time).toBeGreaterThanOrEqual(opening);
      expect(c.time).toBeLessThan(opening + 1000);
    }
    expect(placed.map((c) => c.origin).sort()).toEqual(['dialer', 'schedule']);
  });
});
