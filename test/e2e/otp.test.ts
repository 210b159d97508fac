import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { ADMIN, BALA, GLOBEX, teamDoc } from '../support/fixtures.js';
import { testClock } from '../support/clock.js';
import { ended, reached } from '../support/wait.js';
import { LineClient } from '../support/socket-client.js';

describe('OTP and click2call', () => {
  let s: TestServer;
  const clock = testClock();
  const sendOtp = (number: string, extra = '') => s.api(`/api/v1/otp?number=${number}${extra}`);
  const code = async (number: string) => {
    const res = await sendOtp(number);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const c = await res.text();
    expect(c).toMatch(/^\d{6}$/);
    return c;
  };
  const validate = (number: string, otp: string) => s.api(`/api/v1/otp?otp=${otp}`, { method: 'POST', form: { number } });
  const wrongOf = (c: string) => String((Number(c) + 1) % 1_000_000).padStart(6, '0');

  beforeAll(async () => {
    s = await startServer({ SIM_ANSWER_MS: '20', OTP_TTL_S: '300', OTP_MAX_ATTEMPTS: '3', OTP_SENDS_PER_15MIN: '5' }, { now: clock.now });
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() })).status).toBe(200);
  });
  afterAll(async () => {
    await s.stop();
  });

  it('sends a 6-digit code by SMS, validates it once with true, and stores only a hash', async () => {
    const c = await code('9870000001');
    const outbox = await (await s.ops('/ops/v1/simulator/sms?number=9870000001')).json();
    expect(outbox).toHaveLength(1);
    expect(outbox[0]).toEqual({ id: expect.any(String), svcId: 101, number: '9870000001', message: expect.stringContaining(c), time: expect.any(Number) });
    expect(outbox[0].message).toContain('Click2Call');
    const res = await validate('9870000001', c);
    expect([res.status, await res.json()]).toEqual([200, true]);
    const reuse = await validate('9870000001', c);
    expect(reuse.status).toBe(400);
    expect(await reuse.json()).toMatchObject({ isError: true, code: 'INVALID_PARAMETER', message: expect.stringContaining('otp') });
    const log = JSON.stringify(await s.platform.ctx.events.readAll({ after: 0, maxCount: 100_000 }));
    expect(log).not.toContain(c);
  });

  it('a wrong code is 400; the right one still works until the attempts run out', async () => {
    const c = await code('9870000002');
    expect((await validate('9870000002', wrongOf(c))).status).toBe(400);
    expect((await validate('9870000002', c)).status).toBe(200);
    const d = await code('9870000002');
    for (let i = 0; i < 3; i++) expect((await validate('9870000002', wrongOf(d))).status).toBe(400);
    const exhausted = await validate('9870000002', d);
    expect(exhausted.status).toBe(400);
    expect((await exhausted.json()).message).toMatch(/void/);
  });

  it('a code expires after OTP_TTL_S, and a new code replaces the previous one', async () => {
    const c = await code('9870000003');
    clock.advance(301_000);
    const expired = await validate('9870000003', c);
    expect(expired.status).toBe(400);
    expect((await expired.json()).message).toMatch(/expired/);
    const first = await code('9870000003');
    const second = await code('9870000003');
    if (first !== second) expect((await validate('9870000003', first)).status).toBe(400);
    expect((await validate('9870000003', second)).status).toBe(200);
  });

  it('a number gets at most OTP_SENDS_PER_15MIN codes: 429 with Retry-After past that', async () => {
    for (let i = 0; i < 5; i++) await code('9870000004');
    const limited = await sendOtp('9870000004');
    expect(limited.status).toBe(429);
    const retry = Number(limited.headers.get('retry-after'));
    expect(retry).toBeGreaterThan(0);
    expect(retry).toBeLessThanOrEqual(900);
    expect(await limited.json()).toMatchObject({ isError: true, code: 'RATE_LIMITED' });
    clock.advance(retry * 1000);
    expect((await sendOtp('9870000004')).status).toBe(200);
  });

  it('a burst of requests for one number sends the limit of codes by SMS, not one per request', async () => {
    const statuses = (await Promise.all(Array.from({ length: 12 }, () => sendOtp('9870000014')))).map((r) => r.status).sort();
    expect(statuses).toEqual([...Array(5).fill(200), ...Array(7).fill(429)]);
    expect(await (await s.ops('/ops/v1/simulator/sms?number=9870000014')).json()).toHaveLength(5);
  });

  it('bad input: an invalid number, a non-numeric otp, another tenant', async () => {
    expect((await sendOtp('12ab')).status).toBe(400);
    expect((await validate('9870000005', 'abcdef')).status).toBe(400);
    expect((await sendOtp('9870000005', '&service-id=202')).status).toBe(403);
    expect((await s.api('/api/v1/otp?number=9870000005', { auth: GLOBEX })).status).toBe(200);
  });

  it('click2call with a valid code places the call to a free agent; a wrong or expired code places none', async () => {
    await s.api('/api/v1/agents?status=0&agent-number=9100001001', { method: 'PATCH', auth: ADMIN });
    const c = await code('9876543210');
    const socket = await LineClient.authed(s.platform.socket!.port!, 101, 'k-101-secret');
    const wrong = await s.api(`/api/v1/click2call?otp=${wrongOf(c)}`, { method: 'POST', form: { number: '9876543210', 'service-id': '101' } });
    expect(wrong.status).toBe(400);
    const before = (await s.platform.ctx.reads.find('calls')).length;
    const res = await s.api(`/api/v1/click2call?otp=${c}`, { method: 'POST', form: { number: '9876543210', 'service-id': '101' } });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toEqual({ isError: false, callTxnId: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    const events = await reached(s, body.callTxnId, 'CallBridged');
    expect(events.map((e) => e.type).slice(0, 5)).toEqual(['CallStarted', 'CustomerRing', 'CustomerUp', 'AgentRing', 'AgentUp']);
    expect((await s.platform.ctx.reads.find('calls')).length).toBe(before + 1);
    // Spent: the same code places nothing more.
    expect((await s.api(`/api/v1/click2call?otp=${c}`, { method: 'POST', form: { number: '9876543210', 'service-id': '101' } })).status).toBe(400);
    await s.api('/api/v1/hangup', { method: 'POST', form: { xnid: body.callTxnId } });
    await ended(s, body.callTxnId);
    // The socket saw the call's six leg events, in order, with the spec's fields.
    await socket.until(() => socket.events().filter((e) => e.xnid === body.callTxnId).length >= 6, 'six leg events');
    const seen = socket.events().filter((e) => e.xnid === body.callTxnId);
    expect(seen.slice(0, 4).map((e) => e.event)).toEqual(['CustomerRing', 'CustomerUp', 'AgentRing', 'AgentUp']);
    expect(seen.slice(4).map((e) => e.event).sort()).toEqual(['AgentHangup', 'CustomerHangup']);
    expect(seen[2]).toEqual({ xnid: body.callTxnId, event: 'AgentRing', agent: '1001', number: '9876543210', time: expect.any(Number), data: '', svc: '101', type: 'Outbound' });
    expect(seen[0]!.agent).toBeNull();
    socket.close();
    const e2 = await code('9876543211');
    clock.advance(301_000);
    expect((await s.api(`/api/v1/click2call?otp=${e2}`, { method: 'POST', form: { number: '9876543211' } })).status).toBe(400);
    expect((await s.platform.ctx.reads.find('calls')).length).toBe(before + 1);
    // An agent's own click2call rings that agent, and the code is not spent when the agent is busy.
    const b = await code('9876543212');
    const busy = await s.api(`/api/v1/click2call?otp=${b}`, { method: 'POST', form: { number: '9876543212' }, auth: BALA });
    expect(busy.status).toBe(409);
    expect((await validate('9876543212', b)).status).toBe(200);
  });
});
