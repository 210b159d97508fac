/**
 * The disk fills up under the running platform: commands answer 503 with nothing half-done, and
 * work again once space is freed. DATA_DIR is a small tmpfs mounted for the test (needs root; the
 * test is skipped where mounting is not allowed) and unmounted afterwards.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, rmdirSync, writeFileSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { teamDoc } from '../support/fixtures.js';
import { until } from '../support/until.js';

const mountPoint = mkdtempSync(path.join(tmpdir(), 'ct-full-'));
let mounted = false;
try {
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=24m', 'tmpfs', mountPoint], { stdio: 'ignore' });
  mounted = true;
} catch {
  rmdirSync(mountPoint);
}

/** Fills the file system with one file until it refuses more; returns the file. */
function fill(dir: string): string {
  const file = path.join(dir, 'filler');
  const chunk = Buffer.alloc(256 * 1024);
  let size = 0;
  for (;;) {
    try {
      writeFileSync(file, chunk, { flag: 'a' });
      size += chunk.length;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
      break;
    }
  }
  // The last bytes too.
  for (const n of [4096, 512, 1]) {
    for (;;) {
      try {
        writeFileSync(file, Buffer.alloc(n), { flag: 'a' });
      } catch {
        break;
      }
    }
  }
  return file;
}

describe.skipIf(!mounted)('disk full', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer({ SIM_ANSWER_MS: '10' }, { dataDir: path.join(mountPoint, 'data') });
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() })).status).toBe(200);
  });
  afterAll(async () => {
    await s?.stop().catch(() => {});
    if (mounted) {
      execFileSync('umount', ['-l', mountPoint]);
      rmSync(mountPoint, { recursive: true, force: true });
    }
  });

  it('answers 503 with nothing half-done while the disk is full, and recovers when space is freed', async () => {
    const events = s.platform.ctx.events;
    const agentStream = 'agent-101-1002';
    const toggle = (b: number) => s.api(`/api/v1/agents?break=${b}&agent-number=9100001002`, { method: 'PATCH' });
    expect((await s.api('/api/v1/agents?status=0&agent-number=9100001002', { method: 'PATCH' })).status).toBe(200);
    const filler = fill(mountPoint);
    try {
      // Writes may still land in space SQLite already holds; the first refused one answers 503.
      let refused: Response | null = null;
      let b = 1;
      for (let i = 0; i < 500 && !refused; i++) {
        const before = (await events.readStream(agentStream)).length;
        const res = await toggle(b);
        if (res.status === 200) {
          b = b === 1 ? 0 : 1;
          continue;
        }
        refused = res;
        expect(res.status).toBe(503);
        expect(await res.json()).toMatchObject({ isError: true, code: 'UNAVAILABLE' });
        // Nothing of the refused command was stored.
        expect((await events.readStream(agentStream)).length).toBe(before);
      }
      expect(refused).not.toBeNull();
    } finally {
      unlinkSync(filler);
    }
    // Space is back: commands work again and reads follow them.
    const res = await until(async () => {
      const r = await toggle(1);
      return r.status === 200 ? r : undefined;
    }, 'a command to succeed after space was freed', 20_000, 100);
    expect(await res.json()).toEqual({ status: 0, break: 1 });
    expect((await toggle(0)).status).toBe(200);
  }, 60_000);
});
