import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { ADMIN, ASHA, BALA, GLOBEX, teamDoc } from '../support/fixtures.js';

describe('agents and the dashboard over HTTP', () => {
  let s: TestServer;
  const patch = (query: string, auth: [string, string] = ADMIN) => s.api(`/api/v1/agents?${query}`, { method: 'PATCH', auth });
  const json = async (res: Response) => ({ status: res.status, body: await res.json() });
  const dashboard = async (auth: [string, string] = ADMIN) => (await s.api('/api/v1/dashboard?svc-id=101', { auth })).json();

  beforeAll(async () => {
    s = await startServer();
    const res = await s.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() });
    expect(res.status).toBe(200);
  });
  afterAll(async () => {
    await s.stop();
  });

  it('GET /agents: admin sees every agent of the service with every field typed; an agent sees its own record', async () => {
    const all = await (await s.api('/api/v1/agents')).json();
    expect(all.map((a: { id: number }) => a.id)).toEqual([1001, 1002, 1003]);
    const asha = all[0];
    expect(asha).toEqual({
      id: 1001,
      number: '9100001001',
      number1: null,
      name: 'Asha',
      status: 2,
      sip: 'asha',
      time: expect.any(Number),
      active: true,
      country_code: '91',
      svc_id: 101,
      user_id: 2,
      call_txn_id: '',
      bind_count: 0,
      customer_bound_trunk: null,
    });
    expect(asha.time).toBeGreaterThan(Date.now() - 60_000);
    const own = await (await s.api('/api/v1/agents', { auth: BALA })).json();
    expect(own.map((a: { id: number }) => a.id)).toEqual([1002]);
    expect((await s.api('/api/v1/agents?svc-id=202')).status).toBe(403);
    expect((await (await s.api('/api/v1/agents', { auth: GLOBEX })).json()).map((a: { id: number }) => a.id)).toEqual([2001]);
  });

  it('PATCH /agents answers each transition of the contract table, and reads right after see it', async () => {
    const expectState = async (query: string, auth: [string, string], body: object) => {
      const res = await json(await patch(query, auth));
      expect(res).toEqual({ status: 200, body });
    };
    await expectState('status=0', ASHA, { status: 0, break: -1 });
    expect((await (await s.api('/api/v1/agents', { auth: ASHA })).json())[0].status).toBe(0);
    for (let code = 1; code <= 6; code++) {
      await expectState(`break=${code}`, ASHA, { status: 0, break: code });
      expect((await dashboard()).agentsData.find((a: { id: number }) => a.id === 1001).status).toBe('3');
    }
    await expectState('break=0', ASHA, { status: 0, break: 0 });
    expect((await dashboard()).agentsData.find((a: { id: number }) => a.id === 1001).status).toBe('0');
    await expectState('break=7', ASHA, { status: 2, break: 7 });
    expect((await dashboard()).agentsData.find((a: { id: number }) => a.id === 1001).status).toBe('2');
    await expectState('status=0&agent-number=9100001001', ADMIN, { status: 0, break: -1 });
    await expectState('status=2&agent-sip=asha', ADMIN, { status: 2, break: 7 });
    // JSON and form bodies work too.
    const viaJson = await s.api('/api/v1/agents', { method: 'PATCH', auth: ASHA, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ status: 0 }) });
    expect(await viaJson.json()).toEqual({ status: 0, break: -1 });
    const record = (await (await s.api('/api/v1/agents', { auth: ASHA })).json())[0];
    expect(record.time).toBeGreaterThan(Date.now() - 60_000);
  });

  it('bad input is a 400, 403 or 404 with the error body', async () => {
    const cases: [string, [string, string], number, string][] = [
      ['break=9', ASHA, 400, 'break'],
      ['status=1', ASHA, 400, 'status'],
      ['', ASHA, 400, 'status'],
      ['status=abc', ASHA, 400, 'status'],
      ['status=0&agent-number=9199999999', ADMIN, 404, '9199999999'],
      ['status=0', ADMIN, 400, 'agent-number'],
      ['status=0&agent-number=9100001002', ASHA, 403, 'own agent'],
      ['number=12345', ASHA, 400, 'number'],
      ['number=1234567890123456', ASHA, 400, 'number'],
      [`name=${'x'.repeat(101)}`, ASHA, 400, 'name'],
      ['status=0&svc-id=202', ASHA, 403, '202'],
      ['number=9100001002', ASHA, 409, '9100001002'],
    ];
    for (const [query, auth, status, mentions] of cases) {
      const res = await patch(query, auth);
      const body = await res.json();
      expect({ query, status: res.status }).toEqual({ query, status });
      expect(body).toMatchObject({ isError: true, code: expect.any(String) });
      expect(body.message).toContain(mentions);
    }
  });

  it('changes number and name, answering the new value', async () => {
    expect(await json(await patch('number=9100009999', BALA))).toEqual({ status: 200, body: { number: '9100009999' } });
    expect(await json(await patch('number=9100001002&agent-number=9100009999', ADMIN))).toEqual({ status: 200, body: { number: '9100001002' } });
    expect(await json(await patch('name=Bala%20K&number=9100001002&agent-number=9100001002', BALA))).toEqual({ status: 200, body: { name: 'Bala K' } });
    // The form is picked by the parameters present: beside name (or status) a number is ignored, even a malformed one.
    expect(await json(await patch('name=Bala%20K&number=123&agent-number=9100001002', BALA))).toEqual({ status: 200, body: { name: 'Bala K' } });
    expect(await json(await patch('status=0&number=oops', BALA))).toEqual({ status: 200, body: { status: 0, break: -1 } });
    const agents = await (await s.api('/api/v1/agents')).json();
    expect(agents.find((a: { id: number }) => a.id === 1002)).toMatchObject({ name: 'Bala K', number: '9100001002' });
  });

  it('agents-free lists free agents longest-free first, and the dashboard counts them', async () => {
    for (const n of ['9100001001', '9100001002', '9100001003']) await patch(`status=2&agent-number=${n}`);
    expect(await (await s.api('/api/v1/agents-free')).json()).toEqual([]);
    await patch('status=0&agent-number=9100001003');
    await patch('status=0&agent-number=9100001001');
    await patch('status=0&agent-number=9100001002');
    await patch('break=2&agent-number=9100001001');
    await patch('break=0&agent-number=9100001001');
    expect(await (await s.api('/api/v1/agents-free')).json()).toEqual([
      { name: 'Chitra', id: 1003 },
      { name: 'Bala K', id: 1002 },
      { name: 'Asha', id: 1001 },
    ]);
    await patch('break=4&agent-number=9100001003');
    const free = await (await s.api('/api/v1/agents-free', { auth: BALA })).json();
    expect(free.map((a: { id: number }) => a.id)).toEqual([1002, 1001]);
    const d = await dashboard();
    expect(d.agentStats).toEqual({ freeAgents: 2, busyAgents: 0 });
    expect(d.agentsData.map((a: { status: string }) => a.status)).toEqual(['0', '0', '3']);
  });

  it('GET /dashboard has every field of the dashboard object with its type', async () => {
    const d = await dashboard();
    expect(Object.keys(d).sort()).toEqual(
      ['isSupervisor', 'userName', 'serviceName', 'svcId', 'agents', 'svcSkills', 'dids', 'agentsData', 'callStats', 'customersInQueue', 'agentStats'].sort(),
    );
    expect(d).toMatchObject({ isSupervisor: true, userName: 'acme-admin', serviceName: 'Acme Support', svcId: 101, dids: ['8000000101'] });
    expect(d.svcSkills).toEqual([{ id: 1, name: 'English', index: 0, svc_id: 101 }]);
    expect(d.agentsData[0]).toEqual({
      skills: [{ id: expect.any(Number), agent_id: 1001, skill_id: 1, skill_level: 5 }],
      number: '9100001001',
      name: 'Asha',
      id: 1001,
      sip: 'asha',
      status: expect.stringMatching(/^[0-5]$/),
    });
    expect(d.callStats).toEqual({ totalCalls: expect.any(Number), inIvr: expect.any(Number), ibCalls: expect.any(Number), obCalls: expect.any(Number) });
    expect(d.customersInQueue).toEqual({ data: expect.any(Object), dataCount: expect.stringMatching(/^\d+$/) });
    const asAgent = await dashboard(BALA);
    expect(asAgent.isSupervisor).toBe(false);
    expect(asAgent.agents.map((a: { id: number }) => a.id)).toEqual([1002]);
    expect((await s.api('/api/v1/dashboard')).status).toBe(400);
    expect((await s.api('/api/v1/dashboard?svc-id=202')).status).toBe(403);
  });

  it('GET /transfer-details maps queues, services and agents', async () => {
    expect(await (await s.api('/api/v1/transfer-details?queue-id=2')).json()).toEqual({
      svcid: 101,
      queueid: 2,
      queues: { '1': 'Support', '2': 'Sales' },
      services: { '101': 'Acme Support' },
      agents: { '1001': 'Asha', '1002': 'Bala K', '1003': 'Chitra' },
    });
    expect((await (await s.api('/api/v1/transfer-details')).json()).queueid).toBeNull();
  });

  it('dialer-agent-wrapup answers Success and refuses an unknown agent', async () => {
    const ok = await s.api('/api/v1/dialer-agent-wrapup', { method: 'POST', form: { 'svc-id': '101', 'agent-sip': 'asha', seconds: '15' } });
    expect([ok.status, await ok.text()]).toEqual([200, 'Success']);
    const unknown = await s.api('/api/v1/dialer-agent-wrapup', { method: 'POST', form: { 'svc-id': '101', 'agent-sip': 'nobody', seconds: '15' } });
    expect(unknown.status).toBe(404);
  });
});
