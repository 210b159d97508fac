/**
 * A SIP worker killed (kill -9) with calls up, then started again (CONTRACT 16, issue 31). The parties
 * of a bridged call talk to each other, not through the worker, so a killed worker leaves them
 * connected with no one to end the call, and a phone it rang ringing: the next worker sends BYE in
 * every answered dialog the killed one kept and CANCEL to the ringing one, ends the calls in the log
 * (every started call ends, every agent is free), and takes new calls. A phone that registered just
 * before the kill keeps its binding (test/workers/sip-accounts.test.ts shows the store's side with the
 * coalescing window held open).
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteEventStore } from '../../src/gateways/event-store/sqlite.js';
import { header } from '../../src/gateways/switch/sip/message.js';
import { teamDoc } from '../support/fixtures.js';
import { ADMIN_AUTH, PlatformProcess, buildPlatform, type Build } from '../support/processes.js';
import { freePort, hasSipp, messageLog, outcome, scenario, scenarioWith, sippMessages, startSipp, type Sipp } from '../support/sipp.js';
import { until } from '../support/until.js';

const LOST = 'sip: ended the legs a previous worker left (BYE when answered, CANCEL when ringing)';
let build: Build;
const running: PlatformProcess[] = [];
const sipps: Sipp[] = [];

describe.skipIf(!hasSipp && !process.env.REQUIRE_SIPP)('a SIP worker killed with calls up', () => {
  beforeAll(() => {
    build = buildPlatform();
  }, 180_000);
  afterAll(async () => {
    for (const p of running) await p.ensureDead();
    await Promise.all(sipps.map((s) => s.stop()));
    build?.remove();
  });

  const form = (body: Record<string, string>) => ({ method: 'POST', headers: { ...ADMIN_AUTH, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(body).toString() });
  const types = async (events: SqliteEventStore, xnid: string) => (await events.readStream(`call-${xnid}`)).map((e) => e.type);
  const freeIds = async (p: PlatformProcess) => ((await (await p.fetch('/api/v1/agents-free?svc-id=101', { headers: ADMIN_AUTH })).json()) as { id: number }[]).map((a) => a.id);

  it('the next worker sends BYE on the legs the killed one had up and CANCEL on the one ringing, ends its calls in the log and takes new calls', async () => {
    const trunkLog = messageLog();
    const trunk = await startSipp({ scenario: scenario('trunk-uas.xml'), messageFile: trunkLog });
    sipps.push(trunk);
    const dataDir = build.tempDir('data-');
    const env = { DATA_DIR: dataDir, SWITCH: 'sip', SIP_HOST: '127.0.0.1', SIP_PORT: String(await freePort()), SIP_DOMAIN: 'pbx.test', SIP_TRUNK: `127.0.0.1:${trunk.port}` };
    const doc = teamDoc();
    doc.services[0]!.agents[2]!.sipPassword = 'chitra-phone-secret';
    const first = await PlatformProcess.start(build, 'worker', { ...env, PROVISION_FILE: build.writeJson(doc) });
    running.push(first);
    const events = new SqliteEventStore(path.join(dataDir, 'events.db'));
    const received = (method: string) => sippMessages(trunkLog).filter((m) => m.direction === 'received' && m.message.kind === 'request' && m.message.method === method).map((m) => header(m.message, 'call-id')!);
    try {
      for (const n of ['9100001001', '9100001002']) expect((await first.fetch(`/api/v1/agents?status=0&agent-number=${n}`, { method: 'PATCH', headers: ADMIN_AUTH })).status).toBe(200);
      const place = async (p: PlatformProcess, number: string) => {
        const res = await p.fetch('/api/v1/calls', form({ number }));
        expect(res.status).toBe(200);
        return ((await res.json()) as { id: string }).id;
      };
      // Two calls bridged (four dialogs at the trunk), then the worker is killed: no BYE goes out.
      const calls = [await place(first, '9876543210'), await place(first, '9876543211')];
      for (const xnid of calls) await until(async () => (await types(events, xnid)).includes('CallBridged'), `call ${xnid} bridged`, 20_000);
      const legs = [...new Set(received('INVITE'))];
      expect(legs).toHaveLength(4);
      // And one call ringing (the carrier's number ending 0000 rings until CANCEL).
      const ringing = await place(first, '9876540000');
      await until(async () => (await types(events, ringing)).includes('CustomerRing'), 'the third call ringing', 20_000);
      const ringingLeg = await until(() => [...new Set(received('INVITE'))].find((id) => !legs.includes(id)), 'its INVITE at the trunk');
      // A phone registers just before the kill: its REGISTER is answered 200 only once the binding is stored.
      const contact = `sip:chitra@127.0.0.1:${trunk.port}`;
      const reg = await startSipp({ scenario: scenarioWith('phone-register.xml', { STATUS: '200' }), remote: `127.0.0.1:${env.SIP_PORT}`, keys: { user: 'chitra', domain: 'pbx.test', contact }, args: ['-m', '1', '-au', 'chitra', '-ap', 'chitra-phone-secret'] });
      sipps.push(reg);
      expect(await outcome(reg)).toEqual({ code: 0, output: '' });
      await first.kill9();
      const readDb = new Database(path.join(dataDir, 'read.db'), { readonly: true });
      try {
        const binding = readDb.prepare<[], string>(`SELECT data FROM docs WHERE collection = 'sip-bindings' AND id = 'chitra'`).pluck().get();
        expect(binding && JSON.parse(binding)).toMatchObject({ user: 'chitra', contact });
      } finally {
        readDb.close();
      }
      expect(received('BYE')).toEqual([]);
      expect(received('CANCEL')).toEqual([]);
      for (const xnid of [...calls, ringing]) expect(await types(events, xnid)).not.toContain('CallEnded');

      // The next worker on the same DATA_DIR and SIP address.
      const second = await PlatformProcess.start(build, 'worker again', env);
      running.push(second);
      await until(() => legs.every((id) => received('BYE').includes(id)), 'BYE on every leg the killed worker had up', 20_000);
      // The ringing leg is cancelled, and the carrier's 487 is ACKed (its SIPp call completes).
      await until(() => received('CANCEL').includes(ringingLeg) && received('ACK').filter((id) => id === ringingLeg).length > 0, 'CANCEL, then the ACK of its 487, on the ringing leg', 20_000);
      expect(second.lines.find((l) => l.msg === LOST)).toMatchObject({ legs: 4, ringing: 1 });
      for (const xnid of [...calls, ringing]) {
        await until(async () => (await types(events, xnid)).includes('CallEnded'), `call ${xnid} ended`, 20_000);
        expect((await types(events, xnid)).filter((t) => t === 'CallEnded')).toHaveLength(1);
      }
      await until(async () => (await freeIds(second)).includes(1001) && (await freeIds(second)).includes(1002), 'both agents free again', 20_000);

      // Nothing half-done in the log: every call started has ended.
      const all = await events.readAll({ maxCount: 1_000_000 });
      const started = all.filter((e) => e.type === 'CallStarted').map((e) => (e.data as { xnid: string }).xnid);
      const ended = new Set(all.filter((e) => e.type === 'CallEnded').map((e) => (e.data as { xnid: string }).xnid));
      expect(started.filter((x) => !ended.has(x))).toEqual([]);

      // The new worker takes calls; its own hangup ends them; a later restart finds no dialog to end.
      const next = await place(second, '9876543212');
      await until(async () => (await types(events, next)).includes('CallBridged'), 'a new call bridged', 20_000);
      expect((await second.fetch(`/api/v1/calls/${next}`, form({ signal: 'hangup' }))).status).toBe(200);
      await until(async () => (await types(events, next)).includes('CallEnded'), 'the new call ended', 20_000);
      const byes = received('BYE').length;
      await second.stop();
      const third = await PlatformProcess.start(build, 'worker, third start', env);
      running.push(third);
      expect(third.lines.some((l) => l.msg === LOST)).toBe(false);
      expect(received('BYE')).toHaveLength(byes);
      await third.stop();
    } finally {
      await events.close();
    }
  }, 180_000);
});
