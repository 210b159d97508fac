import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { ADMIN, teamDoc } from '../support/fixtures.js';
import { eventually } from '../support/wait.js';
import { uploadCampaign } from '../../src/commands/dialer/upload.js';
import type { RecordedEvent } from '../../src/gateways/event-store/port.js';

const dialerCalls = async (s: TestServer) =>
  (await s.platform.ctx.events.readAll({ after: 0, maxCount: 1_000_000 })).filter((e) => e.type === 'CallStarted' && (e.data as { origin: string }).origin === 'dialer');

describe('the progressive dialer', () => {
  let s: TestServer;
  const patch = (q: string) => s.api(`/api/v1/agents?${q}`, { method: 'PATCH', auth: ADMIN });
  const campaigns = async () => (await s.ops('/ops/v1/campaigns?svc-id=101')).json();
  beforeAll(async () => {
    s = await startServer({ SIM_ANSWER_MS: '20', SIM_RING_TIMEOUT_MS: '100', SIM_TALK_MS: '150', DIALER_MAX_TRIES: '2', DIALER_RETRY_S: '0' });
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() })).status).toBe(200);
  });
  afterAll(async () => {
    await s.stop();
  });

  it('never has more calls waiting for an agent than free agents, calls every contact, retries misses up to DIALER_MAX_TRIES', async () => {
    await patch('status=0&agent-number=9100001001');
    await patch('status=0&agent-number=9100001002');
    await patch('status=2&agent-number=9100001003');
    const contacts = Array.from({ length: 8 }, (_, i) => ({ number: `98760000${i === 3 ? '00' : `1${i}`}`, fields: { name: `c${i}` } }));
    // Watch the log while the campaign runs: at every placement, calls not yet bridged <= free agents.
    const violations: string[] = [];
    const waiting = new Set<string>();
    const sub = s.platform.ctx.events.subscribeToAll({ after: await s.platform.ctx.events.headPosition() });
    const watch = (async () => {
      for await (const e of sub as AsyncIterable<RecordedEvent>) {
        const d = e.data as { xnid: string; origin?: string };
        if (e.type === 'CallStarted' && d.origin === 'dialer') {
          waiting.add(d.xnid);
          if (waiting.size > 2) violations.push(`${waiting.size} dialer calls waiting with 2 agents`);
        }
        if (e.type === 'CallBridged' || e.type === 'CallEnded') waiting.delete(d.xnid);
      }
    })();
    await uploadCampaign(s.platform.ctx, { svcId: 101, campaignId: 7, endTime: Date.now() + 60_000, fileName: 't.csv', contacts, skipped: 1, invalidateOld: false });
    const done = await eventually(async () => {
      const [c] = await campaigns();
      return c && c.pending === 0 && s.platform.dialer!.callsInFlight === 0 ? c : null;
    }, 'the campaign done', 20_000);
    sub.close();
    await watch;
    expect(violations).toEqual([]);
    expect(done).toMatchObject({ campaignId: 7, total: 8, answered: 7, skipped: 1, pending: 0, dialled: 9, missed: 2 });
    const calls = await dialerCalls(s);
    expect(calls.filter((c) => (c.data as { customerNumber: string }).customerNumber === '9876000000')).toHaveLength(2);
    expect(calls.every((c) => (c.data as { agentFirst: boolean; wrapUp: boolean }).agentFirst === false && (c.data as { wrapUp: boolean }).wrapUp)).toBe(true);
  });

  it('stops at end-time; invalidate-old-data drops contacts not yet dialled', async () => {
    await patch('status=2&agent-number=9100001001');
    await patch('status=2&agent-number=9100001002');
    const before = (await dialerCalls(s)).length;
    await uploadCampaign(s.platform.ctx, { svcId: 101, campaignId: 8, endTime: Date.now() + 400, fileName: 't.csv', contacts: [{ number: '9876111111', fields: {} }], skipped: 0, invalidateOld: false });
    await eventually(async () => (await campaigns()).find((c: { campaignId: number }) => c.campaignId === 8), 'campaign 8 stored');
    await eventually(async () => !(await campaigns()).find((c: { campaignId: number }) => c.campaignId === 8).active, 'campaign 8 past its end', 5000);
    await patch('status=0&agent-number=9100001001');
    // A whole pacing pass with a free agent runs: nothing is placed for an ended campaign.
    await s.platform.dialer!.paced();
    expect((await dialerCalls(s)).length).toBe(before);
    await patch('status=2&agent-number=9100001001');
    await uploadCampaign(s.platform.ctx, { svcId: 101, campaignId: 9, endTime: Date.now() + 60_000, fileName: 'a.csv', contacts: [{ number: '9876222221', fields: {} }, { number: '9876222222', fields: {} }], skipped: 0, invalidateOld: false });
    await uploadCampaign(s.platform.ctx, { svcId: 101, campaignId: 9, endTime: Date.now() + 60_000, fileName: 'b.csv', contacts: [{ number: '9876222223', fields: {} }], skipped: 0, invalidateOld: true });
    await s.platform.ctx.sync.caughtUp();
    const c9 = (await campaigns()).find((c: { campaignId: number }) => c.campaignId === 9);
    expect(c9).toMatchObject({ total: 1, pending: 1, dropped: 2, uploads: 2 });
    await patch('status=0&agent-number=9100001001');
    await eventually(async () => (await campaigns()).find((c: { campaignId: number }) => c.campaignId === 9).pending === 0, 'campaign 9 done', 10_000);
    const numbers = (await dialerCalls(s)).map((c) => (c.data as { customerNumber: string }).customerNumber);
    expect(numbers).toContain('9876222223');
    expect(numbers).not.toContain('9876222221');
  });

  it('wrap-up keeps the agent out of rotation (dashboard "4") after a dialer call', async () => {
    await s.platform.callFlow!.idle();
    expect((await s.api('/api/v1/dialer-agent-wrapup', { method: 'POST', form: { 'svc-id': '101', 'agent-sip': 'asha', seconds: '2' } })).status).toBe(200);
    await uploadCampaign(s.platform.ctx, { svcId: 101, campaignId: 10, endTime: Date.now() + 60_000, fileName: 'w.csv', contacts: [{ number: '9876333331', fields: {} }, { number: '9876333332', fields: {} }], skipped: 0, invalidateOld: false });
    const status = async () => (await (await s.api('/api/v1/dashboard?svc-id=101')).json()).agentsData.find((a: { id: number }) => a.id === 1001).status;
    await eventually(async () => (await status()) === '4', 'Asha in wrap-up', 10_000);
    expect(await (await s.api('/api/v1/agents-free')).json()).toEqual([]);
    await eventually(async () => (await campaigns()).find((c: { campaignId: number }) => c.campaignId === 10).dialled === 2, 'second contact dialled', 10_000);
    // The second call was placed only once the first call's wrap-up had run out.
    const calls = (await dialerCalls(s)).filter((c) => (c.data as { source: { campaignId: number } }).source.campaignId === 10);
    const released = (await s.platform.ctx.events.readStream('agent-101-1001')).find(
      (e) => e.type === 'AgentReleased' && (e.data as { xnid: string }).xnid === (calls[0]!.data as { xnid: string }).xnid,
    )!.data as { time: number; freeAt: number };
    expect(released.freeAt - released.time).toBe(2000);
    expect((calls[1]!.data as { time: number }).time).toBeGreaterThanOrEqual(released.freeAt);
  });
});
