/**
 * WAL checkpoints off the event loop (wal-checkpointer.ts): the thread keeps the WAL bounded while the
 * platform thread writes, a process killed while checkpoints run leaves files that open whole with
 * every acknowledged append, and closing a store ends its thread.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteEventStore } from '../../src/gateways/event-store/sqlite.js';
import { SqliteReadStore } from '../../src/gateways/read-store/sqlite.js';
import { openSqlite } from '../../src/gateways/sqlite.js';
import { BACKSTOP_PAGES, CHECKPOINT_FRAMES, WalCheckpointer } from '../../src/gateways/wal-checkpointer.js';
import { buildOnce, type Build } from '../support/build.js';

const dir = mkdtempSync(path.join(tmpdir(), 'ct-wal-ckpt-'));
let build: Build;
let module: URL;
beforeAll(() => {
  build = buildOnce('ct-wal-ckpt-build-');
  module = pathToFileURL(path.join(build.out, 'src/gateways/wal-checkpointer.js'));
}, 120_000);
afterAll(() => {
  build?.remove();
  rmSync(dir, { recursive: true, force: true });
});

async function until<T>(what: string, f: () => Promise<T> | T, ok: (v: T) => boolean, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('WAL checkpoints on a thread', () => {
  it('checkpoints a WAL that passes its threshold back, so it stays far below what was written', async () => {
    const file = path.join(dir, 'bounded.db');
    const db = openSqlite(file, 'NORMAL');
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, b BLOB)');
    const ckpt = WalCheckpointer.start(db, module)!;
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(BACKSTOP_PAGES);
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    const insert = db.prepare('INSERT INTO t (b) VALUES (?)');
    const blob = Buffer.alloc(8 * pageSize, 7); // ~9 pages a commit
    // Three times the threshold in all, written in rounds; after each the thread catches up, and the
    // next commit starts the WAL over (the platform's loop yields likewise between its commits).
    let copied = 0;
    for (let round = 0; round < 6; round++) {
      for (let i = 0; i < CHECKPOINT_FRAMES / 16; i++) insert.run(blob);
      copied = (await until('a checkpoint', () => ckpt.stats(), (s) => s.frames > copied)).frames;
    }
    insert.run(blob);
    const written = 6 * (CHECKPOINT_FRAMES / 16) * 9;
    expect(copied).toBeGreaterThanOrEqual(written / 2);
    // SQLite reuses the WAL from its start: its size is one round's frames or so, not all of them.
    expect(statSync(`${file}-wal`).size).toBeLessThan((written / 2) * pageSize);
    await ckpt.close();
    db.close();
  });

  it('ends with the store that started it, many times over, and leaves no thread behind', async () => {
    const threads = () => Number(/^Threads:\s+(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]);
    const cycle = async (i: number) => {
      const events = new SqliteEventStore(path.join(dir, `many-${i}.db`), undefined, { checkpointThread: module });
      const reads = new SqliteReadStore(path.join(dir, `many-read-${i}.db`), undefined, { checkpointThread: module });
      expect(events.checkpointer).not.toBeNull();
      expect(reads.checkpointer).not.toBeNull();
      await events.appendToStream('s', [{ type: 'A', data: { i } }]);
      await reads.commit([{ collection: 'c', id: 'x', doc: { i } }], { p: 1 });
      // Both threads run (they answer), and more threads than before run now.
      await Promise.all([events.checkpointer!.stats(), reads.checkpointer!.stats()]);
      expect(threads()).toBeGreaterThanOrEqual(before + 2);
      await events.close();
      await reads.close();
    };
    let before = threads();
    await cycle(0); // libuv's pool and the like start once
    before = threads();
    for (let i = 1; i < 6; i++) await cycle(i);
    expect(threads()).toBe(before);
  });

  it('leaves files that open whole, every acknowledged append in them, after a kill -9 during checkpoints', async () => {
    // The built store as the platform opens it, appending without end; killed once checkpoints have run.
    const script = `
      const { SqliteEventStore } = await import(${JSON.stringify(path.join(build.out, 'src/gateways/event-store/sqlite.js'))});
      const { checkpointerThreadModule } = await import(${JSON.stringify(path.join(build.out, 'src/gateways/wal-checkpointer.js'))});
      const store = new SqliteEventStore(process.argv[2], undefined, { checkpointThread: checkpointerThreadModule });
      const pad = 'x'.repeat(3000);
      for (let n = 1; ; n++) {
        const r = await Promise.all(Array.from({ length: 20 }, (_, k) => store.appendToStream('s-' + (n % 50), [{ type: 'A', data: { n, k, pad } }])));
        const s = await store.checkpointer.stats();
        process.stdout.write(JSON.stringify({ acked: Math.max(...r.map((x) => x.position)), checkpoints: s.checkpoints }) + '\\n');
      }`;
    const scriptFile = path.join(build.work, 'ckpt-kill.mjs');
    writeFileSync(scriptFile, script);
    const file = path.join(dir, 'killed.db');
    const child = spawn(process.execPath, [scriptFile, file], { cwd: build.work, stdio: ['ignore', 'pipe', 'inherit'] });
    let acked = 0;
    let buffered = '';
    await new Promise<void>((resolve, reject) => {
      child.on('exit', () => reject(new Error('the writer ended before it was killed')));
      child.stdout.on('data', (chunk: Buffer) => {
        buffered += chunk.toString();
        const lines = buffered.split('\n');
        buffered = lines.pop()!;
        for (const line of lines) {
          const m = JSON.parse(line) as { acked: number; checkpoints: number };
          acked = m.acked;
          // Several checkpoints done: more are running or about to as it dies.
          if (m.checkpoints >= 3) resolve();
        }
      });
    });
    child.removeAllListeners('exit');
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    const db = openSqlite(file, 'NORMAL');
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    db.close();
    const reopened = new SqliteEventStore(file);
    expect(await reopened.headPosition()).toBeGreaterThanOrEqual(acked);
    await reopened.close();
  }, 60_000);
});
