/**
 * Another customer's call is answered on every call endpoint exactly as a call that does not exist:
 * same status, same code, same message (with the id), so a stranger cannot learn that it exists.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { ADMIN, GLOBEX, teamDoc } from '../support/fixtures.js';
import { ended, reached } from '../support/wait.js';

describe('tenant isolation of calls', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer({ SIM_ANSWER_MS: '10' });
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() })).status).toBe(200);
  });
  afterAll(async () => {
    await s.stop();
  });

  it('answers 404 for a call of another customer, word for word as for an unknown call', async () => {
    expect((await s.api('/api/v1/agents?status=0&agent-number=9100001001', { method: 'PATCH' })).status).toBe(200);
    const placed = await s.api('/api/v1/calls', { method: 'POST', form: { number: '9876543210', 'agent-sip': 'asha' } });
    expect(placed.status).toBe(200);
    const { id: xnid } = (await placed.json()) as { id: string };
    await reached(s, xnid, 'CallBridged');
    const unknown = '00000000-0000-4000-8000-000000000000';
    const requests: Array<(id: string) => [string, Record<string, string>]> = [
      (id) => [`/api/v1/calls/${id}`, { signal: 'hangup' }],
      (id) => ['/api/v1/hangup', { xnid: id }],
      (id) => ['/api/v1/transfer', { 'agent-id': '2001', type: 'BLIND', 'call-id': id, 'to-agent-id': '2002' }],
      (id) => ['/api/v1/add-call', { xnid: id, toagentid: '2002', 'agent-id': '2001' }],
      (id) => ['/api/v1/whisper-spy', { xnid: id, 'country-code': '91', type: 'spy', number: '9811111111' }],
    ];
    for (const make of requests) {
      const answer = async (id: string) => {
        const [url, form] = make(id);
        const res = await s.api(url, { method: 'POST', form, auth: GLOBEX });
        return { url: url.replace(id, '<id>'), status: res.status, body: (await res.text()).replaceAll(id, '<id>') };
      };
      const stranger = await answer(xnid);
      expect(stranger.status).toBe(404);
      expect(stranger).toEqual(await answer(unknown));
    }
    // The call was left alone by all of that, and its owner still controls it.
    expect((await s.api('/api/v1/hangup', { method: 'POST', form: { xnid }, auth: ADMIN })).status).toBe(200);
    const events = await ended(s, xnid);
    expect(events.filter((e) => e.type.endsWith('Requested')).map((e) => e.type)).toEqual(['CallHangupRequested']);
  });
});
