import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { teamDoc } from '../support/fixtures.js';
import { ended } from '../support/wait.js';

describe('SIM_TALK_MS', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer({ SIM_ANSWER_MS: '10', SIM_TALK_MS: '1200' });
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() })).status).toBe(200);
    await s.api('/api/v1/agents?status=0&agent-number=9100001001', { method: 'PATCH' });
  });
  afterAll(async () => {
    await s.stop();
  });

  it('the customer hangs up that long after being bridged; duration counts whole seconds', async () => {
    const { id } = await (await s.api('/api/v1/calls', { method: 'POST', form: { number: '9876543210' } })).json();
    const events = await ended(s, id);
    const hangups = events.filter((e) => /Hangup$/.test(e.type)).map((e) => e.type);
    expect(hangups[0]).toBe('CustomerHangup');
    const end = events.at(-1)!.data as { disposition: string; durationS: number; startTime: number; endTime: number };
    expect(end.disposition).toBe('answered');
    expect(end.endTime - end.startTime).toBeGreaterThanOrEqual(1200);
    expect(end.durationS).toBe(Math.floor((end.endTime - end.startTime) / 1000));
  });
});
