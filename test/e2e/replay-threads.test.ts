/**
 * Replay in two threads (the built code: a worker thread cannot load the TypeScript sources) builds
 * exactly the read models and analytics models the one-thread replay builds from the same log, with
 * the documents held in memory and with them spilled to the staged store.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { buildOnce, type Build } from '../support/build.js';
import { loadConfig } from '../../src/config.js';
import { replay } from '../../src/projections/replay.js';
import { writeSyntheticLog } from '../../bench/synthetic-log.js';

/** Every row of every table of a SQLite file, in a stable order. */
function dump(file: string): Record<string, unknown[]> {
  const db = new Database(file, { readonly: true });
  try {
    const tables = db.prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all();
    const rows = (name: string) => db.prepare(`SELECT * FROM "${name}"`).raw().all().map((r) => JSON.stringify(r)).sort();
    return Object.fromEntries(tables.map(({ name }) => [name, rows(name)]));
  } finally {
    db.close();
  }
}

describe('replay in two threads', () => {
  let build: Build;
  let work: string;
  const dirs = { one: '', two: '', spilled: '' };

  beforeAll(async () => {
    build = buildOnce('ct-replay-threads-');
    work = mkdtempSync(path.join(tmpdir(), 'ct-replay-threads-data-'));
    for (const k of Object.keys(dirs) as (keyof typeof dirs)[]) mkdirSync((dirs[k] = path.join(work, k)));
    const log = await writeSyntheticLog({ file: path.join(dirs.one, 'events.db'), events: 4000, start: Date.UTC(2026, 0, 5), spanMs: 3 * 86_400_000 });
    expect(log.events).toBeGreaterThanOrEqual(4000);
    for (const d of [dirs.two, dirs.spilled]) copyFileSync(path.join(dirs.one, 'events.db'), path.join(d, 'events.db'));
  }, 120_000);
  afterAll(() => {
    build?.remove();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** The built replay in a process of its own. */
  const builtReplay = (dataDir: string, options: object) => {
    const script = `
      const { replay } = await import(${JSON.stringify(path.join(build.out, 'src/projections/replay.js'))});
      const { loadConfig } = await import(${JSON.stringify(path.join(build.out, 'src/config.js'))});
      const r = await replay(loadConfig({ DATA_DIR: ${JSON.stringify(dataDir)}, LOG_LEVEL: 'silent' }), ${JSON.stringify(options)});
      process.stdout.write(JSON.stringify(r));`;
    const file = path.join(build.work, 'replay-run.mjs');
    writeFileSync(file, script);
    return JSON.parse(execFileSync(process.execPath, [file], { cwd: build.work, encoding: 'utf8' })) as { events: number; threads: number };
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
