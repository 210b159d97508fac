/**
 * Dialer ingest benchmark: a 100,000-row .xlsx written with exceljs's streaming writer to a temp file,
 * then read through readContacts. `seconds` is the read alone; `peakRssMiB` the highest resident set
 * size sampled (every 10 ms) during the read, for the whole process: it includes what the writer
 * left behind (about 65 MiB of Node + modules, plus uncollected garbage from writing).
 *
 *   npx tsc -p tsconfig.build.json && node dist/bench/dialer-ingest.js   (dist/ is git-ignored)
 */
import { createReadStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import ExcelJS from 'exceljs';
import { readContacts } from '../src/gateways/spreadsheet/contacts.js';

const ROWS = 100_000;

export async function benchDialerIngest(): Promise<{ rows: number; seconds: number; peakRssMiB: number }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'dialer-ingest-'));
  const file = path.join(dir, 'campaign.xlsx');
  try {
    const writer = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: file, useSharedStrings: true });
    const ws = writer.addWorksheet('Campaign');
    ws.addRow(['Name', 'Mobile', 'City', 'Account']).commit();
    for (let i = 0; i < ROWS; i++) {
      ws.addRow([`Customer ${i}`, 9_000_000_000 + i, i % 2 ? 'Pune' : 'Mumbai', `AC-${i.toString().padStart(8, '0')}`]).commit();
    }
    ws.commit();
    await writer.commit();

    let peak = process.memoryUsage().rss;
    const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
    const started = process.hrtime.bigint();
    let rows = 0;
    try {
      const result = await readContacts(createReadStream(file), 'campaign.xlsx', () => {
        rows++;
      });
      if (result.contacts !== ROWS || result.skipped !== 0) throw new Error(`unexpected result ${JSON.stringify(result)}`);
    } finally {
      clearInterval(timer);
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    peak = Math.max(peak, process.memoryUsage().rss);
    return { rows, seconds, peakRssMiB: Math.round((peak / 2 ** 20) * 10) / 10 };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const before = process.memoryUsage().rss;
  benchDialerIngest().then(
    (r) => console.log(JSON.stringify({ ...r, rssBeforeMiB: Math.round(before / 2 ** 20) })),
    (err: unknown) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
}
