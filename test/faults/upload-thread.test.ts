/**
 * Issue 29 item 2: dialer uploads are read off the platform thread. While one tenant's large sheet
 * is read, another tenant's requests are answered at once; one tenant's uploads are read one at a
 * time, and beyond one more waiting they are refused (429), not queued without bound.
 */
import { PassThrough } from 'node:stream';
import ExcelJS from 'exceljs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { teamDoc } from '../support/fixtures.js';
import { ADMIN_AUTH, PlatformProcess, basic, buildPlatform, type Build } from '../support/processes.js';

let build: Build;
let server: PlatformProcess;
const GLOBEX_AUTH = basic('globex-admin', 's3cret-globex');

/** A sheet that costs seconds to read and stores nothing much: every row's number is invalid (skipped). */
async function slowSheet(rows: number): Promise<Buffer> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (c: Buffer) => chunks.push(c));
  const writer = new ExcelJS.stream.xlsx.WorkbookWriter({ stream: out, useSharedStrings: false });
  const ws = writer.addWorksheet('S');
  ws.addRow(['phone', 'name', 'note']).commit();
  for (let i = 0; i < rows; i++) ws.addRow([`n/a ${i}`, `Customer ${i}`, `note ${i % 97}`]).commit();
  ws.commit();
  await writer.commit();
  return Buffer.concat(chunks);
}

function upload(bytes: Buffer, campaign: number) {
  const form = new FormData();
  form.set('svc-id', '101');
  form.set('campaign-id', String(campaign));
  form.set('end-time', String(Math.floor(Date.now() / 1000) + 86_400));
  form.set('file', new Blob([new Uint8Array(bytes)]), 'slow.xlsx');
  return server.fetch('/api/v1/dialer', { method: 'POST', headers: ADMIN_AUTH, body: form });
}

beforeAll(async () => {
  build = buildPlatform();
  server = await PlatformProcess.onDataDir(build, build.tempDir('data-'), { PROVISION_FILE: build.writeJson(teamDoc()) });
}, 180_000);

afterAll(async () => {
  await server?.ensureDead();
  build?.remove();
});

describe('dialer uploads off the platform thread', () => {
  it("another tenant's requests are answered while a large sheet is read; one tenant's third upload at once is refused 429", async () => {
    const sheet = await slowSheet(90_000);
    expect(sheet.length).toBeLessThan(10 * 2 ** 20);
    // One upload alone, for how long its reading takes here.
    const t0 = Date.now();
    const alone = await upload(sheet, 1);
    expect(alone.status, await alone.text()).toBe(200);
    const readMs = Date.now() - t0;

    // Three at once by one tenant, and another tenant pinging all along.
    let done = false;
    const pings: number[] = [];
    const pinger = (async () => {
      while (!done) {
        const t = Date.now();
        const res = await server.fetch('/api/v1/ping', { headers: GLOBEX_AUTH });
        await res.text();
        expect(res.status).toBe(200);
        pings.push(Date.now() - t);
      }
    })();
    const answers = await Promise.all([upload(sheet, 2), upload(sheet, 3), upload(sheet, 4)]);
    done = true;
    await pinger;
    const statuses = answers.map((r) => r.status).sort();
    const refused = answers.find((r) => r.status === 429);
    const slowest = Math.max(...pings);
    console.log(`upload of ${sheet.length} bytes read in ${readMs} ms alone; 3 at once: ${statuses.join(' ')}; another tenant's ${pings.length} pings meanwhile, slowest ${slowest} ms`);
    expect(statuses).toEqual([200, 200, 429]);
    expect(await refused!.json()).toMatchObject({ isError: true, code: 'RATE_LIMITED' });
    expect(refused!.headers.get('retry-after')).toMatch(/^\d+$/);
    // Generous for a loaded machine: no ping waits for a whole read.
    expect(pings.length).toBeGreaterThan(5);
    expect(slowest).toBeLessThan(Math.max(1000, readMs));
  }, 180_000);
});
