import ExcelJS from 'exceljs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { onEngines } from '../support/engines.js';
import { GLOBEX, teamDoc } from '../support/fixtures.js';
import { bombStream, NS, workbookParts, zip } from '../support/zip.js';
import type { ContactDoc } from '../../src/projections/campaigns.js';

describe('POST /api/v1/dialer', () => {
  let s: TestServer;
  const upload = (fields: Record<string, string>, file?: { name: string; bytes: Buffer | string }, auth?: [string, string]) => {
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) form.append(k, v);
    if (file) form.append('file', new Blob([typeof file.bytes === 'string' ? file.bytes : new Uint8Array(file.bytes)]), file.name);
    return s.api('/api/v1/dialer', { method: 'POST', body: form, ...(auth ? { auth } : {}) });
  };
  const base = (campaign: number) => ({ 'svc-id': '101', 'campaign-id': String(campaign), 'end-time': String(Date.now() - 1000) });
  const contacts = async (campaign: number) => {
    // The contacts' records are the lagging read model: the answer does not wait for them.
    await s.platform.ctx.sync.allCaughtUp();
    return (await s.platform.ctx.reads.find<ContactDoc>('campaign-contacts', { svcId: 101, campaignId: campaign }, { orderBy: { field: 'seq' } })).filter((c) => c.status !== 'dropped');
  };
  const progress = async (campaign: number) => (await (await s.ops('/ops/v1/campaigns?svc-id=101')).json()).find((c: { campaignId: number }) => c.campaignId === campaign);

  beforeAll(async () => {
    // end-time in the past: the dialer stores the contacts but calls nobody, so the test sees them as uploaded.
    s = await startServer();
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() })).status).toBe(200);
  });
  afterAll(async () => {
    await s.stop();
  });

  it('accepts an xlsx written by exceljs with numeric and text number cells, keeping the other columns', async () => {
    const wb = new ExcelJS.Workbook();
    const ws = wb.addWorksheet('Leads');
    ws.addRow(['Name', 'Phone Number', 'City']);
    ws.addRow(['Asha', 9876543210, 'Pune']);
    ws.addRow(['Ben', '+91 98765-43211', 'Delhi']);
    ws.addRow(['Bad', 'not a number', 'Nowhere']);
    const bytes = Buffer.from(await wb.xlsx.writeBuffer());
    const res = await upload(base(1), { name: 'leads.xlsx', bytes });
    expect([res.status, res.headers.get('content-type'), await res.text()]).toEqual([200, 'text/plain; charset=utf-8', 'Success']);
    const stored = await contacts(1);
    expect(stored.map((c) => c.number)).toEqual(['9876543210', '+919876543211']);
    expect(stored[0]!.fields).toEqual({ Name: 'Asha', City: 'Pune' });
    expect(await progress(1)).toMatchObject({ total: 2, skipped: 1, pending: 2 });
  });

  it('keeps CSV numbers as strings: leading zeros survive; semicolons, BOM and CRLF are fine', async () => {
    const csv = '\uFEFFname;mobile\r\nA;09876543210\r\nB;"0 98 76 54 32 11"\r\n';
    expect((await upload(base(2), { name: 'c.CSV', bytes: csv })).status).toBe(200);
    expect((await contacts(2)).map((c) => c.number)).toEqual(['09876543210', '09876543211']);
  });

  it('invalidate-old-data drops the contacts not yet dialled before adding the new ones', async () => {
    expect((await upload(base(3), { name: 'a.csv', bytes: 'phone\n9876500001\n9876500002\n' })).status).toBe(200);
    expect((await upload({ ...base(3), 'invalidate-old-data': 'true' }, { name: 'b.csv', bytes: 'phone\n9876500003\n' })).status).toBe(200);
    expect((await contacts(3)).map((c) => c.number)).toEqual(['9876500003']);
    expect(await progress(3)).toMatchObject({ total: 1, dropped: 2, uploads: 2 });
  });

  it('a large upload is stored in chunks of contacts, and dropped in chunks; the counts and records follow', async () => {
    const rows = Array.from({ length: 1234 }, (_, i) => `c${i},${9876600000 + i}`);
    expect((await upload(base(21), { name: 'big.csv', bytes: `name,phone\n${rows.join('\n')}\n` })).status).toBe(200);
    const stored = await contacts(21);
    expect(stored.map((c) => c.contactId)).toEqual(rows.map((_, i) => `1.${i + 1}`));
    expect(stored[1233]).toMatchObject({ number: '9876601233', fields: { name: 'c1233' }, status: 'pending', attempts: 0 });
    expect((await upload({ ...base(21), 'invalidate-old-data': 'true' }, { name: 'b.csv', bytes: 'phone\n9876500009\n' })).status).toBe(200);
    expect((await contacts(21)).map((c) => [c.contactId, c.number])).toEqual([['2.1', '9876500009']]);
    expect(await progress(21)).toMatchObject({ total: 1, dropped: 1234, pending: 1, uploads: 2 });
    const types = (await s.platform.ctx.events.readStream('campaign-101-21')).map((e) => e.type);
    expect(types.filter((t) => t === 'CampaignContactsAdded')).toHaveLength(6); // 1,234 in chunks of 250, then 1
    expect(types.filter((t) => t === 'CampaignPendingDropped')).toHaveLength(5);
  });

  it('refuses a renamed PDF, a zip bomb, a .txt and a missing file with 400, and stores nothing', async () => {
    const pdf = Buffer.from('%PDF-1.4\n%\xE2\xE3\xCF\xD3\n1 0 obj << /Type /Catalog >> endobj\n', 'latin1');
    const head = `<?xml version="1.0"?><worksheet ${NS}><sheetData><row r="1"><c r="A1"><v>9876543210</v></c></row>`;
    const tail = '</sheetData></worksheet>';
    const bomb = zip([
      ...workbookParts([{ name: 'S', file: 'sheet1.xml' }]),
      { name: 'xl/worksheets/sheet1.xml', data: Buffer.alloc(0), raw: bombStream(head, 300, tail), size: head.length + 300 * 2 ** 20 + tail.length, crc: 0 },
    ]);
    for (const file of [{ name: 'leads.xlsx', bytes: pdf }, { name: 'bomb.xlsx', bytes: bomb }, { name: 'notes.txt', bytes: 'phone\n9876543210\n' }]) {
      const res = await upload(base(4), file);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ isError: true, code: 'INVALID_PARAMETER', message: expect.stringContaining('file') });
    }
    const missing = await upload(base(4));
    expect(missing.status).toBe(400);
    expect(await progress(4)).toBeUndefined();
  });

  // Volume: 100,000 contact documents through the in-process MongoDB double outlast the 10 s read-your-writes wait;
  // on PostgreSQL the upload and its projection took more than the test's minute on this (shared, loaded) machine.
  it.skipIf(onEngines)('refuses 100,001 rows with 413 and takes 100,000', async () => {
    const rows = (n: number) => 'phone\n' + Array.from({ length: n }, (_, i) => String(9_000_000_000 + i)).join('\n') + '\n';
    const over = await upload(base(5), { name: 'big.csv', bytes: rows(100_001) });
    expect(over.status).toBe(413);
    expect((await over.json()).code).toBe('PAYLOAD_TOO_LARGE');
    expect(await progress(5)).toBeUndefined();
    const ok = await upload(base(6), { name: 'big.csv', bytes: rows(100_000) });
    expect(ok.status).toBe(200);
    expect(await progress(6)).toMatchObject({ total: 100_000 });
  }, 60_000);

  it('refuses a file over 10 MiB with 413 even when the cut-off part does not parse', async () => {
    // Busboy stops the stream at the limit; what arrived is one unparseable cell, yet the answer is 413.
    for (const file of [{ name: 'huge.csv', bytes: '9'.repeat(11 * 2 ** 20) }, { name: 'huge.xlsx', bytes: Buffer.alloc(11 * 2 ** 20, 1) }]) {
      const res = await upload(base(8), file);
      expect(res.status).toBe(413);
      expect(await res.json()).toMatchObject({ isError: true, code: 'PAYLOAD_TOO_LARGE' });
    }
    expect(await progress(8)).toBeUndefined();
  }, 60_000);

  it('checks parameters and scope', async () => {
    const csv = { name: 'a.csv', bytes: 'phone\n9876500001\n' };
    expect((await upload({ 'svc-id': '101', 'campaign-id': '7' }, csv)).status).toBe(400);
    expect((await upload({ ...base(7), 'end-time': 'soon' }, csv)).status).toBe(400);
    expect((await upload({ ...base(7), 'svc-id': '202' }, csv)).status).toBe(403);
    expect((await upload({ ...base(7), 'svc-id': '202' }, csv, GLOBEX)).status).toBe(200);
  });
});
