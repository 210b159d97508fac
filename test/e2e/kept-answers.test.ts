/**
 * Kept answers over HTTP: GET /agents and GET /dashboard served again from memory still see every
 * change stored before the request, whether this server's command stored it or another process on
 * the same DATA_DIR did (the CLI provisioning beside a running server).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openEventStore } from '../../src/platform.js';
import { applyProvisioning } from '../../src/commands/provisioning/provision.js';
import { exampleDoc, startProvisioned, type TestServer } from '../support/server.js';

describe('kept answers over HTTP', () => {
  let s: TestServer;
  const ids = async (p: string) => ((await (await s.api(p)).json()) as { id: number }[]).map((a) => a.id);
  const dashboardIds = async () => ((await (await s.api('/api/v1/dashboard?svc-id=101')).json()) as { agentsData: { id: number }[] }).agentsData.map((a) => a.id);

  beforeAll(async () => {
    s = await startProvisioned();
  });
  afterAll(async () => {
    await s.stop();
  });

  it('an agent provisioned by another process on the same DATA_DIR is in the next answers', async () => {
    expect(await ids('/api/v1/agents')).toEqual([1001]);
    expect(await ids('/api/v1/agents')).toEqual([1001]);
    expect(await dashboardIds()).toEqual([1001]);
    const doc = exampleDoc();
    doc.services[0].agents.push({ id: 1002, name: 'Bala', number: '9100001002', sip: 'bala' });
    // A second connection to the log, as `telephony provision` makes while the server runs (to the
    // server's own engines when the suite runs on them).
    const events = await openEventStore(loadConfig({ ...s.engines?.env, DATA_DIR: s.dataDir }), Date.now);
    try {
      await applyProvisioning(events, doc);
    } finally {
      await events.close();
    }
    expect(await ids('/api/v1/agents')).toEqual([1001, 1002]);
    expect(await dashboardIds()).toEqual([1001, 1002]);
  });

  it('concurrent reads around acknowledged commands: every read after an acknowledgement shows it', async () => {
    const status = async () => {
      const body = (await (await s.api('/api/v1/dashboard?svc-id=101')).json()) as { agentsData: { id: number; status: string }[] };
      return body.agentsData.find((a) => a.id === 1001)!.status;
    };
    const record = async () => ((await (await s.api('/api/v1/agents')).json()) as { id: number; status: number }[]).find((a) => a.id === 1001)!.status;
    for (const [query, dashboardStatus, agentStatus] of [
      ['status=0', '0', 0],
      ['break=2', '3', 0],
      ['break=0', '0', 0],
      ['status=2', '2', 2],
    ] as const) {
      // Reads in flight while the command runs keep the answers busy being kept and voided.
      const background = Array.from({ length: 10 }, () => Promise.all([status(), record()]));
      const res = await s.api(`/api/v1/agents?${query}&agent-number=9100001001`, { method: 'PATCH' });
      expect(res.status).toBe(200);
      const after = await Promise.all(Array.from({ length: 10 }, () => Promise.all([status(), record()])));
      expect(after).toEqual(Array.from({ length: 10 }, () => [dashboardStatus, agentStatus]));
      await Promise.all(background);
    }
  });
});
