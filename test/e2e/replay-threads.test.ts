/**
 * Replay in two threads (the built code: a worker thread cannot load the TypeScript sources) builds
 * exactly the read models and analytics models the one-thread replay builds from the same log, with
 * the documents held in memory and with them spilled to the staged store; a worker that dies fails
 * the replay and leaves the old models in place, served as before.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { buildOnce, type Build } from '../support/build.js';
import { dumpSqlite as dump } from '../support/sqlite-dump.js';
import { loadConfig } from '../../src/config.js';
import { replay } from '../../src/projections/replay.js';
import { writeSyntheticLog } from '../../bench/synthetic-log.js';
import { SqliteReadStore } from '../../src/gateways/read-store/sqlite.js';
import { startServer } from '../support/server.js';
import { onEngines } from '../support/engines.js';

describe('replay in two threads', () => {
  let build: Build;
  let work: string;
  const dirs = { one: '', two: '', spilled: '', dying: '' };

  beforeAll(async () => {
    build = buildOnce('ct-replay-threads-');
    work = mkdtempSync(path.join(tmpdir(), 'ct-replay-threads-data-'));
    for (const k of Object.keys(dirs) as (keyof typeof dirs)[]) mkdirSync((dirs[k] = path.join(work, k)));
    const log = await writeSyntheticLog({ file: path.join(dirs.one, 'events.db'), events: 4000, start: Date.UTC(2026, 0, 5), spanMs: 3 * 86_400_000 });
    expect(log.events).toBeGreaterThanOrEqual(4000);
    for (const d of [dirs.two, dirs.spilled, dirs.dying]) copyFileSync(path.join(dirs.one, 'events.db'), path.join(d, 'events.db'));
  }, 120_000);
  afterAll(() => {
    build?.remove();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** The built replay in a process of its own: its exit status and output. */
  const runBuiltReplay = (dataDir: string, options: object) => {
    const script = `
      const { replay } = await import(${JSON.stringify(path.join(build.out, 'src/projections/replay.js'))});
      const { loadConfig } = await import(${JSON.stringify(path.join(build.out, 'src/config.js'))});
      const r = await replay(loadConfig({ DATA_DIR: ${JSON.stringify(dataDir)}, LOG_LEVEL: 'silent' }), ${JSON.stringify(options)});
      process.stdout.write(JSON.stringify(r));`;
    const file = path.join(build.work, 'replay-run.mjs');
    writeFileSync(file, script);
    return spawnSync(process.execPath, [file], { cwd: build.work, encoding: 'utf8' });
  };
  const builtReplay = (dataDir: string, options: object) => {
    const run = runBuiltReplay(dataDir, options);
    if (run.status !== 0) throw new Error(`replay failed: ${run.stderr}`);
    return JSON.parse(run.stdout) as { events: number; threads: number };
  };

  it('builds the same stores as one thread, documents in memory or spilled', async () => {
    const one = await replay(loadConfig({ DATA_DIR: dirs.one, LOG_LEVEL: 'silent' }), { threads: false });
    expect(one.threads).toBe(1);
    const two = builtReplay(dirs.two, {});
    const spilled = builtReplay(dirs.spilled, { maxDocs: 200, pageSize: 250 });
    expect(two).toMatchObject({ events: one.events, threads: 2 });
    expect(spilled).toMatchObject({ events: one.events, threads: 2 });

    const expected = { read: dump(path.join(dirs.one, 'read.db')), analytics: dump(path.join(dirs.one, 'analytics.db')) };
    expect(expected.read.docs!.length).toBeGreaterThan(500);
    expect(expected.analytics.call_rows!.length).toBeGreaterThan(200);
    for (const d of [dirs.two, dirs.spilled]) {
      expect({ read: dump(path.join(d, 'read.db')), analytics: dump(path.join(d, 'analytics.db')) }).toEqual(expected);
    }
  }, 120_000);
});

describe.skipIf(onEngines)('replay when a worker thread dies', () => {
  let build: Build;
  let dataDir: string;

  beforeAll(async () => {
    build = buildOnce('ct-replay-dying-');
    dataDir = mkdtempSync(path.join(tmpdir(), 'ct-replay-dying-data-'));
    await writeSyntheticLog({ file: path.join(dataDir, 'events.db'), events: 6000, start: Date.UTC(2026, 0, 5), spanMs: 3 * 86_400_000 });
  }, 120_000);
  afterAll(() => {
    build?.remove();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const runDying = (how: 'throw' | 'exit') => {
    const script = `
      const { replay } = await import(${JSON.stringify(path.join(build.out, 'src/projections/replay.js'))});
      const { loadConfig } = await import(${JSON.stringify(path.join(build.out, 'src/config.js'))});
      await replay(loadConfig({ DATA_DIR: ${JSON.stringify(dataDir)}, LOG_LEVEL: 'silent' }), { workerDiesAfter: { events: 2500, how: ${JSON.stringify(how)} } });`;
    const file = path.join(build.work, `replay-dying-${how}.mjs`);
    writeFileSync(file, script);
    return spawnSync(process.execPath, [file], { cwd: build.work, encoding: 'utf8' });
  };

  it.each(['throw', 'exit'] as const)('a worker that dies (%s) fails the replay; the old models stay in place and the running server serves them', async (how) => {
    // Old models a replay would not rebuild as they are: one agent renamed, one export row gone.
    await replay(loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent' }), { threads: false });
    const reads = new SqliteReadStore(path.join(dataDir, 'read.db'));
    const agent = (await reads.get('agents', '101-1001'))!;
    await reads.commit([{ collection: 'agents', id: '101-1001', doc: { ...agent, name: 'Tampered' } }], {});
    await reads.close();
    const analytics = new Database(path.join(dataDir, 'analytics.db'));
    analytics.prepare('DELETE FROM call_rows WHERE xnid = (SELECT MIN(xnid) FROM call_rows)').run();
    analytics.close();
    // The read models; not the running server's workers' own progress (its SMS sender works on).
    const models = () => {
      const read = dump(path.join(dataDir, 'read.db'));
      return { read: { ...read, checkpoints: read.checkpoints!.filter((r) => !String(r).startsWith('["worker:')) }, analytics: dump(path.join(dataDir, 'analytics.db')) };
    };

    const server = await startServer({}, { dataDir });
    try {
      const auth: [string, string] = ['bench-admin', 'bench-admin-pw'];
      const from = Date.UTC(2026, 0, 5);
      const gets = ['/api/v1/agents', '/api/v1/dashboard?svc-id=101', `/api/v1/calls?svc-id=101&from=${from}&to=${from + 3 * 86_400_000}&format=jsonl`];
      const answers = async () => Promise.all(gets.map(async (g) => { const r = await server.api(g, { auth }); return `${r.status} ${await r.text()}`; }));
      const served = await answers();
      expect(served[0]).toContain('"Tampered"');
      // As the running server keeps them (it appends an event of its own at start).
      const before = models();

      const run = runDying(how);
      expect(run.status).not.toBe(0);
      expect(run.stderr).toMatch(how === 'throw' ? /injected failure after 2500 events/ : /replay worker stopped \(exit code 3\)/);

      // Nothing was swapped or left behind, and the running server answers as before.
      expect(readdirSync(dataDir).filter((f) => f.includes('.replay'))).toEqual([]);
      expect(await answers()).toEqual(served);
      expect(models()).toEqual(before);
    } finally {
      await server.stop({ keepData: true });
    }
  }, 120_000);
});
