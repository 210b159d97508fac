/**
 * The analytics projector on its own thread (the built code: a worker thread cannot load the
 * TypeScript sources). The platform thread appends and queries; the thread folds and writes: reports
 * and `caughtUp` see every event appended before them, soon (the thread is told of appends, it does
 * not wait for its poll); a thread killed mid-fold makes `caughtUp` answer 503, is started again and
 * resumes from the stored checkpoint, so the models end exactly as one uninterrupted fold leaves
 * them; stop() leaves the checkpoint at the head. The built platform runs it so.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { buildOnce, type Build } from '../support/build.js';
import { dumpSqlite as dump } from '../support/sqlite-dump.js';

describe('analytics projector on its own thread (built)', () => {
  let build: Build;
  beforeAll(() => {
    build = buildOnce('ct-analytics-thread-');
  }, 120_000);
  afterAll(() => build?.remove());

  /** Runs `body` as an ES module in a process of its own, with the built modules as `m`; returns what it printed as JSON. */
  const run = async (name: string, body: string): Promise<any> => {
    const mod = (p: string) => JSON.stringify(path.join(build.out, p));
    const script = `
      const m = {
        ...(await import(${mod('src/gateways/event-store/sqlite.js')})),
        ...(await import(${mod('src/analytics/store.js')})),
        ...(await import(${mod('src/analytics/model.js')})),
        ...(await import(${mod('src/analytics/thread.js')})),
        ...(await import(${mod('bench/synthetic-log.js')})),
        ...(await import(${mod('src/platform.js')})),
        ...(await import(${mod('src/config.js')})),
      };
      const path = await import('node:path');
      const errors = [];
      const logger = { info() {}, warn(o, msg) { errors.push(msg); }, error(o, msg) { errors.push(msg); } };
      const until = async (what, ok, ms = 20_000) => {
        const deadline = Date.now() + ms;
        while (!(await ok())) {
          if (Date.now() > deadline) throw new Error('timed out waiting for ' + what);
          await new Promise((r) => setTimeout(r, 5));
        }
      };
      const status = (p) => p.then(() => 200, (e) => e.statusCode ?? e.message);
      const dir = ${JSON.stringify(mkdtempSync(path.join(build.work, `${name}-`)))};
      ${body}`;
    const file = path.join(build.work, `${name}.mjs`);
    writeFileSync(file, script);
    const { stdout } = await promisify(execFile)(process.execPath, [file], { cwd: build.work, encoding: 'utf8', timeout: 90_000 });
    return JSON.parse(stdout);
  };

  const provisionAndLogins = `
    const d0 = Date.UTC(2026, 0, 1);
    let clock = d0;
    const events = new m.SqliteEventStore(path.join(dir, 'events.db'), () => clock);
    const at = async (time, streamId, type, data) => {
      clock = time;
      await events.appendToStream(streamId, [{ type, data }]);
    };
    const ids = { svcId: 7, agentId: 1 };
    await at(d0, 'service-7', 'ServiceProvisioned', { svcId: 7, name: 'S', customer: 'c', timezone: 'UTC', dids: [], skills: [], queues: [], webhook: null, socketKey: null, blocked: [] });
    await at(d0, 'agent-7-1', 'AgentProvisioned', { svcId: 7, agentId: 1, name: 'A', number: '9100000001', sip: 'a', countryCode: '91', skills: [] });
    /** Agent 1 logged in for one second at hour i. */
    const login = async (i) => {
      await at(d0 + i * 3_600_000, 'agent-7-1', 'AgentLoggedIn', { ...ids, time: d0 + i * 3_600_000 });
      await at(d0 + i * 3_600_000 + 1000, 'agent-7-1', 'AgentLoggedOut', { ...ids, time: d0 + i * 3_600_000 + 1000 });
    };
    const loginMs = (store) => store.agentDays(7, d0, d0 + 30 * 86_400_000)[0]?.loginMs ?? 0;`;

  it('folds what the platform thread appends, told at once: caughtUp and reports see every event before them; stop() leaves the checkpoint at the head', async () => {
    const out = await run(
      'appends',
      `${provisionAndLogins}
      const store = new m.AnalyticsStore(path.join(dir, 'analytics.db'));
      const analytics = m.analyticsThread(events, store, logger);
      await analytics.start();
      const seen = [];
      const waits = [];
      for (let i = 0; i < 100; i++) {
        await login(i);
        const t = performance.now();
        await analytics.caughtUp(5000);
        waits.push(performance.now() - t);
        seen.push(loginMs(store));
      }
      waits.sort((a, b) => a - b);
      // Appends nobody waits for, then stop: the thread writes them all before it ends.
      for (let i = 100; i < 150; i++) await login(i);
      const head = await events.headPosition();
      const changedHere = store.db.prepare('SELECT total_changes() AS n').get().n;
      await analytics.stop();
      const after = new m.AnalyticsStore(path.join(dir, 'analytics.db'));
      process.stdout.write(JSON.stringify({
        can: m.canRunAnalyticsThread(events),
        seen, medianWaitMs: waits[50], changedHere, head,
        checkpoint: after.checkpoint(), loginMsAfterStop: loginMs(after), errors,
      }));
      after.close();
      await events.close();`,
    );
    expect(out.can).toBe(true);
    // After each caughtUp the report holds every login made before it.
    expect(out.seen).toEqual(Array.from({ length: 100 }, (_, i) => (i + 1) * 1000));
    // Told of each append, not waiting for the 250 ms poll (which would make the median wait ~125 ms).
    expect(out.medianWaitMs).toBeLessThan(60);
    // This thread's connection only read.
    expect(out.changedHere).toBe(0);
    expect(out.checkpoint).toBe(out.head);
    expect(out.loginMsAfterStop).toBe(150_000);
    expect(out.errors).toEqual([]);
  }, 120_000);

  it('a thread killed mid-fold: caughtUp answers 503, a new thread resumes from the checkpoint, and the models end as one uninterrupted fold leaves them', async () => {
    const out = await run(
      'killed',
      `const log = await m.writeSyntheticLog({ file: path.join(dir, 'events.db'), events: 40_000, start: Date.UTC(2026, 0, 5), spanMs: 3 * 86_400_000 });
      ${provisionAndLogins}
      const store = new m.AnalyticsStore(path.join(dir, 'analytics.db'));
      const analytics = m.analyticsThread(events, store, logger);
      await analytics.start();
      let head = await events.headPosition();
      const kills = [];
      for (let k = 0; k < 3; k++) {
        const from = analytics.position;
        // Killed once it has written past where it started (the first thread from 0, each new one from its checkpoint).
        await until('progress', () => analytics.position > from);
        const position = analytics.position;
        await analytics.kill();
        kills.push({ position, refused: await status(analytics.caughtUp(1000)) });
        // Appended while no thread runs: the next one folds them too.
        await login(k);
      }
      head = await events.headPosition();
      await until('a new thread caught up', async () => (await status(analytics.caughtUp(1000))) === 200);
      const reported = loginMs(store);
      await analytics.stop();
      // The same log folded in one go, in this thread.
      const ref = new m.AnalyticsStore(path.join(dir, 'reference.db'));
      const model = new m.AnalyticsModel(ref);
      for (let after = 0; ; ) {
        const page = await events.readAll({ after, maxCount: 5000 });
        if (page.length === 0) break;
        for (const e of page) model.apply(e);
        after = page[page.length - 1].position;
      }
      model.flush();
      ref.close();
      await events.close();
      process.stdout.write(JSON.stringify({ logEvents: log.events, head, kills, reported, errors }));`,
    );
    expect(out.logEvents).toBeGreaterThanOrEqual(40_000);
    expect(out.kills).toHaveLength(3);
    for (const k of out.kills) expect(k.refused).toBe(503);
    // Each kill came before the thread had folded the synthetic log.
    expect(out.kills.every((k: { position: number }) => k.position < out.logEvents)).toBe(true);
    expect(out.reported).toBe(3000);
    expect(out.errors.filter((e: string) => !/^analytics thread (exited|was ended)/.test(e))).toEqual([]);
    const dir = path.join(build.work, (await import('node:fs')).readdirSync(build.work).find((f) => f.startsWith('killed-'))!);
    const threaded = dump(path.join(dir, 'analytics.db'));
    const reference = dump(path.join(dir, 'reference.db'));
    expect(threaded.meta).toEqual([JSON.stringify(['checkpoint', String(out.head)])]);
    expect(threaded).toEqual(reference);
  }, 180_000);

  it('the built platform folds analytics on the thread: reports answer from it, 503 while it is down, and again once restarted', async () => {
    const out = await run(
      'platform',
      `let clock = Date.UTC(2026, 2, 10, 4, 30);
      const config = m.loadConfig({ DATA_DIR: dir, PORT: '0', SOCKET_PORT: '0', LOG_LEVEL: 'silent', RATE_LIMIT_RPS: '0', EMBEDDED_THREADS: 'on', PROVISION_FILE: ${JSON.stringify(path.resolve('examples/provisioning.json'))} });
      const platform = await m.createPlatform(config, { now: () => clock });
      const { httpUrl } = await platform.start();
      const auth = { authorization: 'Basic ' + Buffer.from('acme-admin:s3cret-admin').toString('base64') };
      const api = async (method, p) => {
        const res = await fetch(httpUrl + p, { method, headers: auth });
        return { status: res.status, body: await res.json() };
      };
      const report = async () => {
        const r = await api('GET', '/api/v1/reports/agents?svc-id=101&from=' + (clock - 86_400_000) + '&to=' + (clock + 86_400_000));
        return r.status === 200 ? r.body.find((a) => a.agentId === 1001).loginSeconds : r.status;
      };
      await api('PATCH', '/api/v1/agents?status=0&agent-number=9100001001');
      clock += 90_000;
      await api('PATCH', '/api/v1/agents?status=2&agent-number=9100001001');
      const first = await report();
      const threaded = typeof platform.ctx.analytics.kill === 'function';
      await platform.ctx.analytics.kill();
      const whileDown = await report();
      clock += 10_000;
      await api('PATCH', '/api/v1/agents?status=0&agent-number=9100001001');
      clock += 30_000;
      await api('PATCH', '/api/v1/agents?status=2&agent-number=9100001001');
      let again;
      await until('reports again', async () => typeof (again = await report()) === 'number' && again !== 503);
      const head = await platform.ctx.events.headPosition();
      await platform.stop();
      const after = new m.AnalyticsStore(path.join(dir, 'analytics.db'));
      process.stdout.write(JSON.stringify({ threaded, first, whileDown, again, head, checkpoint: after.checkpoint() }));
      after.close();`,
    );
    expect(out.threaded).toBe(true);
    expect(out.first).toBe(90);
    expect(out.whileDown).toBe(503);
    expect(out.again).toBe(120);
    expect(out.checkpoint).toBe(out.head);
  }, 120_000);
});
