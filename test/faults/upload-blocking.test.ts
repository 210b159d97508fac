/**
 * Issue 29 item 2: a 100,000-contact dialer upload never holds the platform thread long. Its sheet is
 * read on a thread of its own; its contacts go into the log packed, and their records are projected a
 * chunk at a time by a runner that other tenants' requests do not wait for. Measured inside the server
 * process (monitorEventLoopDelay, preloaded with --import), from the upload's start until every read
 * model has applied it, while another tenant pings. The bounds are generous (a loaded 2-core machine):
 * before, the platform thread was held for over a second and pings waited for every contact's record.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { teamDoc } from '../support/fixtures.js';
import { xlsxOf } from '../../bench/campaign-sheet.js';
import { ADMIN_AUTH, OPS_AUTH, PlatformProcess, basic, buildPlatform, type Build, type LogLine } from '../support/processes.js';

const ROWS = 100_000;
const GLOBEX_AUTH = basic('globex-admin', 's3cret-globex');

/** Reports the platform thread's longest event-loop delay since the last report, on SIGUSR2. */
const MONITOR = `
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { isMainThread } from 'node:worker_threads';
if (isMainThread) {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  process.on('SIGUSR2', () => {
    console.log(JSON.stringify({ msg: 'event-loop delay', maxMs: h.max / 1e6 }));
    h.reset();
  });
}
`;

let build: Build;
let server: PlatformProcess;

/** The longest delay since the last call (the first call starts the window). */
async function loopDelayMs(): Promise<number> {
  const seen = server.lines.length;
  server.proc.kill('SIGUSR2');
  const line: LogLine = await server.waitForLine((l) => l.msg === 'event-loop delay' && server.lines.indexOf(l) >= seen, 10_000);
  return line.maxMs as number;
}

async function projectionLag(): Promise<number> {
  const text = await (await server.fetch('/metrics', { headers: OPS_AUTH })).text();
  const m = /^telephony_projection_lag_events (\d+)/m.exec(text);
  if (!m) throw new Error('no telephony_projection_lag_events in /metrics');
  return Number(m[1]);
}

beforeAll(async () => {
  build = buildPlatform();
  const monitor = path.join(build.tempDir('monitor-'), 'loop-monitor.mjs');
  writeFileSync(monitor, MONITOR);
  server = await PlatformProcess.onDataDir(build, build.tempDir('data-'), {
    PROVISION_FILE: build.writeJson(teamDoc()),
    NODE_OPTIONS: `--import=${monitor}`,
  });
}, 180_000);

afterAll(async () => {
  await server?.ensureDead();
  build?.remove();
});

describe('a 100,000-contact upload and the platform thread', () => {
  it("another tenant's pings are answered all along, and the platform thread is never held for long", async () => {
    const sheet = await xlsxOf(ROWS);
    for (let i = 0; i < 20; i++) expect((await server.fetch('/api/v1/ping', { headers: GLOBEX_AUTH })).status).toBe(200);
    await loopDelayMs();

    let done = false;
    const pings: number[] = [];
    const pinger = (async () => {
      while (!done) {
        const t = performance.now();
        const res = await server.fetch('/api/v1/ping', { headers: GLOBEX_AUTH });
        await res.text();
        expect(res.status).toBe(200);
        pings.push(performance.now() - t);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const form = new FormData();
    form.set('svc-id', '101');
    form.set('campaign-id', '1');
    form.set('end-time', String(Math.floor(Date.now() / 1000) - 60)); // stored, never dialled
    form.set('file', new Blob([new Uint8Array(sheet)]), 'campaign.xlsx');
    const res = await server.fetch('/api/v1/dialer', { method: 'POST', headers: ADMIN_AUTH, body: form });
    expect(res.status, await res.text()).toBe(200);
    // Until every read model (the contacts' records too) has applied the upload.
    const deadline = Date.now() + 120_000;
    while ((await projectionLag()) > 0) {
      if (Date.now() > deadline) throw new Error('the read models did not catch up with the upload within 120 s');
      await new Promise((r) => setTimeout(r, 100));
    }
    done = true;
    await pinger;
    const held = await loopDelayMs();

    const campaigns = (await (await server.fetch('/ops/v1/campaigns?svc-id=101', { headers: OPS_AUTH })).json()) as Array<{ campaignId: number; total: number }>;
    expect(campaigns.find((c) => c.campaignId === 1)?.total).toBe(ROWS);
    const slowest = Math.max(...pings);
    console.log(`100,000-contact upload: platform thread held at most ${held.toFixed(0)} ms; ${pings.length} pings of another tenant, slowest ${slowest.toFixed(0)} ms`);
    expect(pings.length).toBeGreaterThan(10);
    expect(held).toBeLessThan(500);
    expect(slowest).toBeLessThan(1000);
  }, 300_000);
});
