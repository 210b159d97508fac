/** CONTRACT section 17's queue alerts end to end: signed webhook deliveries once per crossing, SSE, the metric, across a restart. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { startServer, type TestServer } from '../support/server.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { openSse, basic } from '../support/sse.js';
import { until } from '../support/until.js';
import { ended, eventually, reached } from '../support/wait.js';
import { ROUTING_ADMIN, routingDoc } from '../support/routing.js';
import { replay } from '../../src/projections/replay.js';
import { onEngines } from '../support/engines.js';
import { loadConfig } from '../../src/config.js';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

describe('queue alerts (CONTRACT 17)', () => {
  let s: TestServer;
  let rx: Receiver;
  const ENV = { SIM_ANSWER_MS: '30' };
  const doc = () => {
    const d = routingDoc({ webhook: { url: `${rx.url}/hook`, secret: SECRET } }) as any;
    d.services[0].queues[0].maxWaitS = 1;
    d.services[0].queues[2].serviceLevelTarget = 80;
    return d;
  };
  const api = (p: string, init: Parameters<TestServer['api']>[1] = {}) => s.api(p, { auth: ROUTING_ADMIN, ...init });
  const setAgent = async (agentNumber: string, q: string) => expect((await api(`/api/v1/agents?${q}&agent-number=${agentNumber}&svc-id=301`, { method: 'PATCH' })).status).toBe(200);
  const inbound = async (from: string, ivr = '') => (await (await s.ops('/ops/v1/simulator/inbound', { method: 'POST', json: { did: '8000000301', from, ivr } })).json()).xnid as string;
  const hangup = (xnid: string) => s.ops('/ops/v1/simulator/hangup', { method: 'POST', json: { xnid, party: 'customer' } });
  const alerts = () => rx.received.map((r) => ({ r, body: JSON.parse(r.body) })).filter((x) => typeof x.body.type === 'string' && x.body.type.startsWith('QueueAlert'));
  const metric = async () => (await (await s.ops('/metrics')).text()).split('\n').filter((l) => l.startsWith('telephony_queue_alerts{'));

  beforeAll(async () => {
    rx = await startReceiver();
    s = await startServer(ENV);
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: doc() })).status).toBe(200);
  });
  afterAll(async () => {
    await s?.stop();
    await rx?.close();
  });

  it('wait: QueueAlert once when a caller waits past maxWaitS, QueueAlertCleared once when it is over; signed, listed, on SSE and the metric', async () => {
    const sse = await openSse(`${s.url}/api/v1/events?svc-id=301`, { authorization: basic(ROUTING_ADMIN) });
    const agentSse = await openSse(`${s.url}/api/v1/events?svc-id=301`, { authorization: basic(['anu', 's3cret-anu']) });
    const caller = await inbound('9876500071');
    const joined = ((await reached(s, caller, 'CallQueued')).find((e) => e.type === 'CallQueued')!.data as { time: number }).time;
    const raised = await until(() => alerts().find((a) => a.body.type === 'QueueAlert'), 'the QueueAlert delivery', 10_000);
    expect(raised.body).toEqual({ type: 'QueueAlert', svcId: 301, queueId: 1, reason: 'wait', value: expect.any(Number), threshold: 1, time: expect.any(Number) });
    expect(raised.body.value).toBeGreaterThan(1);
    // Within a second of the crossing (the caller passing 1 s).
    expect(raised.body.time - (joined + 1000)).toBeLessThan(1000);
    expect(new Webhook(SECRET).verify(raised.r.body, raised.r.headers)).toEqual(raised.body);
    const [msg] = await sse.waitFor(1, 'QueueAlert');
    expect(JSON.parse(msg!.data)).toEqual(raised.body);
    expect(await metric()).toContain('telephony_queue_alerts{svc_id="301",queue_id="1",reason="wait"} 1');
    // Nothing more while the condition holds.
    await until(async () => (await api('/api/v1/queues?svc-id=301').then((r) => r.json()))[0].longestWaitSeconds >= 3, 'a longer wait', 10_000);
    expect(alerts().length).toBe(1);

    await setAgent('9300003003', 'status=0');
    await reached(s, caller, 'CallBridged');
    const cleared = await until(() => alerts().find((a) => a.body.type === 'QueueAlertCleared'), 'the QueueAlertCleared delivery', 10_000);
    expect(cleared.body).toMatchObject({ type: 'QueueAlertCleared', svcId: 301, queueId: 1, reason: 'wait', threshold: 1 });
    expect(cleared.r.headers['webhook-id']).not.toBe(raised.r.headers['webhook-id']);
    expect(JSON.parse((await sse.waitFor(1, 'QueueAlertCleared'))[0]!.data)).toEqual(cleared.body);
    await until(async () => !(await metric()).some((l) => l.includes('reason="wait"')), 'the metric cleared');
    // Both in the delivery ledger; the agent's stream carried neither.
    const ledger = await (await s.ops('/ops/v1/deliveries?svc-id=301')).json();
    expect(ledger.filter((d: { status: string; kind: string }) => d.kind === 'webhook' && d.status === 'delivered').length).toBeGreaterThanOrEqual(2);
    expect(agentSse.messages.some((m) => m.event.startsWith('QueueAlert'))).toBe(false);
    sse.close();
    agentSse.close();
    await hangup(caller);
    await ended(s, caller);

    // A restart after a replay of the log neither repeats nor loses a crossing.
    const dataDir = s.dataDir;
    await s.stop({ keepData: true });
    // (the replay of the embedded stores; on the engine doubles, a restart only)
    if (!onEngines) await replay(loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent' }));
    s = await startServer(ENV, { dataDir });
    expect(await metric()).toEqual([]);
    const again = await inbound('9876500072');
    await reached(s, again, 'CallBridged');
    await hangup(again);
    await ended(s, again);
    await eventually(async () => s.platform.callFlow!.openCalls === 0, 'no open calls');
    expect(alerts().map((a) => a.body.type)).toEqual(['QueueAlert', 'QueueAlertCleared']);
  });

  it('serviceLevel: below the target once 5 entered in 15 minutes; cleared when it is back', async () => {
    await setAgent('9300003003', 'status=2');
    const before = alerts().length;
    // Five callers give up in the priority queue: 0 % answered within 20 s.
    for (let i = 0; i < 5; i++) {
      const x = await inbound(`98765001${10 + i}`, '9');
      await reached(s, x, 'CallQueued');
      await hangup(x);
      await ended(s, x);
    }
    const raised = await until(() => alerts().slice(before).find((a) => a.body.type === 'QueueAlert'), 'the serviceLevel alert', 10_000);
    expect(raised.body).toMatchObject({ svcId: 301, queueId: 3, reason: 'serviceLevel', value: 0, threshold: 80 });
    // The live alert survives a replay and a restart, and is not sent again.
    const dataDir = s.dataDir;
    await s.stop({ keepData: true });
    // (the replay of the embedded stores; on the engine doubles, a restart only)
    if (!onEngines) await replay(loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent' }));
    s = await startServer(ENV, { dataDir });
    expect(await metric()).toEqual(['telephony_queue_alerts{svc_id="301",queue_id="3",reason="serviceLevel"} 1']);
    const page = await (await fetch(`${s.url}/wallboard/state?svc-id=301`, { headers: { authorization: basic(ROUTING_ADMIN) } })).json();
    expect(page.alerts).toEqual([{ queueId: 3, reason: 'serviceLevel', value: 0, threshold: 80, time: raised.body.time }]);
    // Twenty answered at once: 20 of 25 = 80 %, not below the target.
    await setAgent('9300003003', 'status=0');
    for (let i = 0; i < 20; i++) {
      const x = await inbound(`98765002${10 + i}`, '9');
      await reached(s, x, 'CallBridged');
      await hangup(x);
      await ended(s, x);
    }
    const cleared = await until(() => alerts().slice(before).find((a) => a.body.type === 'QueueAlertCleared'), 'the serviceLevel alert cleared', 10_000);
    expect(cleared.body).toMatchObject({ svcId: 301, queueId: 3, reason: 'serviceLevel', value: 80, threshold: 80 });
    expect(alerts().slice(before).map((a) => a.body.type)).toEqual(['QueueAlert', 'QueueAlertCleared']);
  });
});
