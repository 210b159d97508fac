/**
 * A SIP worker restarting with calls up (CONTRACT 16): the stopping worker sends BYE to every leg it
 * holds; the next one ends the calls left open (nothing half-done in the log: every call ended, every
 * agent free) and keeps the phones' registrations, so an agent is rung at its phone at once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { teamDoc } from '../support/fixtures.js';
import { ended, eventually, reached } from '../support/wait.js';
import { freePort, hasSipp, messageLog, outcome, scenario, scenarioWith, sippMessages, startSipp, type Sipp } from '../support/sipp.js';
import { header } from '../../src/gateways/switch/sip/message.js';

describe.skipIf(!hasSipp && !process.env.REQUIRE_SIPP)('a SIP worker restarting with calls up', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'ct-sip-restart-'));
  const sipps: Sipp[] = [];
  const servers: TestServer[] = [];
  afterAll(async () => {
    for (const s of servers) await s.stop({ keepData: true }).catch(() => undefined);
    await Promise.all(sipps.map((c) => c.stop()));
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('ends the calls it had up with BYE, the next worker closes them in the log, and registrations survive', async () => {
    const trunkLog = messageLog();
    const trunk = await startSipp({ scenario: scenario('trunk-uas.xml'), messageFile: trunkLog });
    const phoneLog = messageLog();
    const phone = await startSipp({ scenario: scenario('trunk-uas.xml'), messageFile: phoneLog });
    sipps.push(trunk, phone);
    const sipPort = await freePort();
    const env = { SWITCH: 'sip', SIP_HOST: '127.0.0.1', SIP_PORT: String(sipPort), SIP_DOMAIN: 'pbx.test', SIP_TRUNK: `127.0.0.1:${trunk.port}` };
    const first = await startServer(env, { dataDir });
    servers.push(first);
    const doc = teamDoc();
    doc.services[0].agents[0].sipPassword = 'asha-phone-secret';
    expect((await first.ops('/ops/v1/provisioning', { method: 'PUT', json: doc })).status).toBe(200);
    for (const [n, q] of [['9100001001', 'status=0'], ['9100001002', 'status=2'], ['9100001003', 'status=2']]) {
      expect((await first.api(`/api/v1/agents?${q}&agent-number=${n}`, { method: 'PATCH' })).status).toBe(200);
    }
    const contact = `sip:asha@127.0.0.1:${phone.port}`;
    const reg = await startSipp({ scenario: scenarioWith('phone-register.xml', { STATUS: '200' }), remote: `127.0.0.1:${sipPort}`, keys: { user: 'asha', domain: 'pbx.test', contact }, args: ['-m', '1', '-au', 'asha', '-ap', 'asha-phone-secret'] });
    sipps.push(reg);
    expect(await outcome(reg)).toEqual({ code: 0, output: '' });

    const res = await first.api('/api/v1/calls', { method: 'POST', form: { number: '9876543210' } });
    const xnid = (await res.json()).id as string;
    await reached(first, xnid, 'CallBridged');
    const callIds = (log: string) => new Set(sippMessages(log).filter((m) => m.direction === 'received' && m.message.kind === 'request' && m.message.method === 'INVITE').map((m) => header(m.message, 'call-id')));
    const legs = [...callIds(trunkLog), ...callIds(phoneLog)];
    expect(legs).toHaveLength(2);
    await first.stop({ keepData: true });
    servers.splice(0);
    // Both parties got BYE from the worker that stopped.
    const byes = () => [...sippMessages(trunkLog), ...sippMessages(phoneLog)].filter((m) => m.direction === 'received' && m.message.kind === 'request' && m.message.method === 'BYE').map((m) => header(m.message, 'call-id'));
    await eventually(async () => legs.every((id) => byes().includes(id)), 'BYE on both legs');

    const second = await startServer(env, { dataDir });
    servers.push(second);
    const events = await ended(second, xnid);
    expect(events.filter((e) => e.type === 'CallEnded')).toHaveLength(1);
    const asha = await eventually(async () => {
      const agents = await (await second.api('/api/v1/agents?svc-id=101')).json();
      const a = (agents.data ?? agents).find?.((x: { id: number }) => x.id === 1001);
      return a && String(a.status) === '0' ? a : null;
    }, 'the agent free again');
    expect(asha).toBeTruthy();
    // The registration survived: the next call rings the phone.
    expect(await second.platform.ctx.reads.get('sip-bindings', 'asha')).toMatchObject({ contact });
    const again = (await (await second.api('/api/v1/calls', { method: 'POST', form: { number: '9876543210' } })).json()).id as string;
    await reached(second, again, 'CallBridged');
    expect(callIds(phoneLog).size).toBe(2);
    expect((await second.api(`/api/v1/calls/${again}`, { method: 'POST', form: { signal: 'hangup' } })).status).toBe(200);
    await ended(second, again);
  }, 60_000);
});
