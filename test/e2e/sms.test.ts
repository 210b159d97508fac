import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { teamDoc } from '../support/fixtures.js';
import { eventually } from '../support/wait.js';
import type { OutgoingSms, SmsGateway } from '../../src/gateways/sms/port.js';
import { randomUUID } from 'node:crypto';
import { handleCommand } from '../../src/commands/decider.js';
import { smsDecider } from '../../src/commands/sms/sms.js';
import { streams } from '../../src/domain/streams.js';

describe('send-sms through the simulator outbox', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer();
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() })).status).toBe(200);
  });
  afterAll(async () => {
    await s.stop();
  });

  it('answers the id as plain text at once; the message reaches the outbox under that id', async () => {
    const res = await s.api('/api/v1/send-sms', { method: 'POST', form: { number: '9876543210', message: 'Your ticket 42 is closed', 'service-id': '101' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const id = await res.text();
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const sent = await eventually(async () => {
      const box = await (await s.ops('/ops/v1/simulator/sms?number=9876543210')).json();
      return box.find((m: { id: string }) => m.id === id);
    }, 'the SMS in the outbox');
    expect(sent).toEqual({ id, svcId: 101, number: '9876543210', message: 'Your ticket 42 is closed', time: expect.any(Number) });
    // The worker records SmsSent after the switch took the message: on the log once that append is synced.
    const types = await eventually(async () => {
      const t = (await s.platform.ctx.events.readStream(`sms-${id}`)).map((e) => e.type);
      return t.length === 2 ? t : null;
    }, 'SmsSent on the log');
    expect(types).toEqual(['SmsRequested', 'SmsSent']);
  });

  it('sends an SmsRequested found in the log that nobody queued (a crash right after the append)', async () => {
    const id = randomUUID();
    const data = { id, svcId: 101, number: '9876500001', message: 'from the log', countryCode: '', callTxnId: null, tries: 1, otp: false, userId: 1, time: Date.now() };
    await handleCommand(s.platform.ctx.events, streams.sms(id), smsDecider, { type: 'Request', data });
    await eventually(async () => {
      const box = await (await s.ops('/ops/v1/simulator/sms?number=9876500001')).json();
      return box.some((m: { id: string }) => m.id === id);
    }, 'the SMS in the outbox');
  });

  it('refuses bad input with 400 naming the parameter', async () => {
    const cases: [Record<string, string>, string][] = [
      [{ number: '9876543210', 'service-id': '101' }, 'message'],
      [{ number: '9876543210', message: 'x'.repeat(1601), 'service-id': '101' }, 'message'],
      [{ number: '98-76', message: 'hi', 'service-id': '101' }, 'number'],
      [{ number: '9876543210', message: 'hi', 'service-id': '101', tries: '0' }, 'tries'],
      [{ number: '9876543210', message: 'hi', 'service-id': '101', tries: '6' }, 'tries'],
      [{ number: '9876543210', message: 'hi' }, 'service-id'],
    ];
    for (const [form, name] of cases) {
      const res = await s.api('/api/v1/send-sms', { method: 'POST', form });
      expect(res.status).toBe(400);
      expect((await res.json()).message).toContain(name);
    }
    expect((await s.api('/api/v1/send-sms', { method: 'POST', form: { number: '9876543210', message: 'hi', 'service-id': '202' } })).status).toBe(403);
    const ok = await s.api('/api/v1/send-sms', { method: 'POST', form: { number: '9876543210', message: 'x'.repeat(1600), 'service-id': '101' } });
    expect(ok.status).toBe(200);
  });
});

/** A provider that refuses the first `failures` tries of every message. */
class FlakyGateway implements SmsGateway {
  readonly tries = new Map<string, number>();
  readonly delivered: OutgoingSms[] = [];
  constructor(private readonly failures: number) {}
  async send(sms: OutgoingSms) {
    const n = (this.tries.get(sms.id) ?? 0) + 1;
    this.tries.set(sms.id, n);
    if (n <= this.failures) throw new Error(`provider refused try ${n}`);
    this.delivered.push(sms);
  }
}

describe('send-sms retries', () => {
  let s: TestServer;
  const gateway = new FlakyGateway(2);
  beforeAll(async () => {
    s = await startServer({ SMS_RETRY_MS: '30' }, { sms: gateway });
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() })).status).toBe(200);
  });
  afterAll(async () => {
    await s.stop();
  });

  const send = async (tries: string) =>
    (await s.api('/api/v1/send-sms', { method: 'POST', form: { number: '9876543210', message: `tries ${tries}`, 'service-id': '101', tries } })).text();
  const typesOf = async (id: string) => (await s.platform.ctx.events.readStream(`sms-${id}`)).map((e) => e.type);

  it('a gateway failing twice then succeeding delivers on the third of tries=3, each try an event', async () => {
    const id = await send('3');
    const types = await eventually(async () => {
      const t = await typesOf(id);
      return t.includes('SmsSent') ? t : null;
    }, 'the SMS sent');
    expect(types).toEqual(['SmsRequested', 'SmsAttemptFailed', 'SmsAttemptFailed', 'SmsSent']);
    expect(gateway.tries.get(id)).toBe(3);
    expect(gateway.delivered.map((m) => m.id)).toContain(id);
  });

  it('with tries=2 it ends failed after two tries, and is not tried again', async () => {
    const id = await send('2');
    const types = await eventually(async () => {
      const t = await typesOf(id);
      return t.includes('SmsFailed') ? t : null;
    }, 'the SMS failed');
    expect(types).toEqual(['SmsRequested', 'SmsAttemptFailed', 'SmsAttemptFailed', 'SmsFailed']);
    await s.platform.ctx.sync.caughtUp();
    const doc = await s.platform.ctx.reads.get('sms', id);
    expect(doc).toMatchObject({ status: 'failed', attempts: 2 });
    expect(gateway.tries.get(id)).toBe(2);
  });
});
