import { randomBytes } from 'node:crypto';
import { PassThrough, Readable } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import zlib from 'node:zlib';
import ExcelJS from 'exceljs';
import { describe, expect, it } from 'vitest';
import { type Contact, readContacts, type ReadLimits, SpreadsheetError } from '../../src/gateways/spreadsheet/contacts.js';
import { bombStream, NS, sheetXml, workbookParts, zip } from '../support/zip.js';

/** The bytes as a stream, in chunks of `chunk` bytes (small chunks exercise the parsers' seams). */
function stream(bytes: Buffer | string, chunk = 64 * 1024): Readable {
  const b = typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes;
  const parts: Buffer[] = [];
  for (let i = 0; i < b.length; i += chunk) parts.push(b.subarray(i, i + chunk));
  return Readable.from(parts);
}

async function read(bytes: Buffer | string, name: string, limits?: ReadLimits, chunk?: number) {
  const contacts: Contact[] = [];
  const result = await readContacts(stream(bytes, chunk), name, (c) => void contacts.push(c), limits);
  expect(result.contacts).toBe(contacts.length);
  return { skipped: result.skipped, contacts };
}

async function failure(p: Promise<unknown>): Promise<SpreadsheetError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SpreadsheetError);
  return err as SpreadsheetError;
}

async function xlsx(build: (wb: ExcelJS.Workbook) => void): Promise<Buffer> {
  const wb = new ExcelJS.Workbook();
  build(wb);
  return Buffer.from(await wb.xlsx.writeBuffer());
}

/** A workbook of `n` rows under a `phone`, `name`, ... header, from exceljs's streaming writer (inline strings). */
async function streamedXlsx(n: number, row: (i: number) => unknown[]): Promise<Buffer> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (c: Buffer) => chunks.push(c));
  const file = new ExcelJS.stream.xlsx.WorkbookWriter({ stream: out, useSharedStrings: false });
  const ws = file.addWorksheet('S');
  ws.addRow(['phone', 'name', 'note']).commit();
  for (let i = 0; i < n; i++) ws.addRow(row(i)).commit();
  ws.commit();
  await file.commit();
  return Buffer.concat(chunks);
}

// ---------------------------------------------------------------------------------------------
// ---------------------------------------------------------------------------------------------

describe('readContacts: xlsx', () => {
  it('reads numeric, text, rich-text and formula number cells of the first sheet, other columns as fields', async () => {
    const buf = await xlsx((wb) => {
      const ws = wb.addWorksheet('Contacts');
      ws.addRow(['Name', 'Mobile No.', 'City', 'Balance']);
      ws.addRow(['Asha', 9876543210, 'Pune', 12.5]);
      ws.addRow(['Ben', '+44 20 7946 0958', 'London', 0]);
      ws.addRow(['Chloé', { richText: [{ text: '0 98-76' }, { text: '5.43(210)' }] }, '', null]);
      ws.addRow(['Dev', { formula: '9123456780+0', result: 9123456780 }, 'Delhi']);
      ws.addRow(['Eve', 98765.5, 'nowhere']); // not a whole number
      ws.addRow(['Finn', { text: '+1 (555) 010-9999', hyperlink: 'tel:+15550109999' }]);
      wb.addWorksheet('Other').addRow(['phone', '5550000000']);
    });
    const r = await read(buf, 'Campaign.XLSX');
    expect(r.contacts).toEqual([
      { number: '9876543210', fields: { Name: 'Asha', City: 'Pune', Balance: '12.5' } },
      { number: '+442079460958', fields: { Name: 'Ben', City: 'London', Balance: '0' } },
      { number: '09876543210', fields: { Name: 'Chloé' } },
      { number: '9123456780', fields: { Name: 'Dev', City: 'Delhi' } },
      { number: '+15550109999', fields: { Name: 'Finn' } },
    ]);
    expect([r.contacts.length, r.skipped]).toEqual([5, 1]);
  });

  it('finds the number column of a header-less sheet by its content, the first row being data', async () => {
    const buf = await xlsx((wb) => {
      const ws = wb.addWorksheet('S');
      ws.addRow(['Asha', 9876543210, 'VIP']);
      ws.addRow(['Ben', '+91 98765 43211']);
      ws.addRow(['Chris', 'unknown']);
      ws.addRow(['Dee', 9876543212]);
    });
    const r = await read(buf, 'list.xlsx');
    expect(r.contacts).toEqual([
      { number: '9876543210', fields: { 'column 1': 'Asha', 'column 3': 'VIP' } },
      { number: '+919876543211', fields: { 'column 1': 'Ben' } },
      { number: '9876543212', fields: { 'column 1': 'Dee' } },
    ]);
    expect(r.skipped).toBe(1);
  });

  it('reads a sheet whose rows and cells leave out the optional r attributes (issue 29 item 3)', async () => {
    // As several writers produce it: cells follow one another, rows too; one cell names its column.
    const sheet = sheetXml(
      '<row><c t="s"><v>0</v></c><c t="inlineStr"><is><t>Name</t></is></c><c t="s"><v>1</v></c></row>' +
        '<row><c><v>9876543210</v></c><c t="inlineStr"><is><t>Asha</t></is></c><c t="s"><v>2</v></c></row>' +
        '<row/>' +
        '<row><c t="inlineStr"><is><t>9123456789</t></is></c><c r="C4" t="b"><v>1</v></c></row>',
    );
    const sst = `<?xml version="1.0"?><sst ${NS}><si><t>Phone</t></si><si><r><t>No</t></r><r><t>te</t></r><rPh><t>x</t></rPh></si><si><t>first</t></si></sst>`;
    const parts = workbookParts([{ name: 'S', file: 'sheet1.xml' }]);
    parts[1] = {
      name: 'xl/_rels/workbook.xml.rels',
      data: Buffer.from(
        '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
          '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/>' +
          '<Relationship Id="rId9" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/></Relationships>',
      ),
    };
    const buf = zip([...parts, { name: 'xl/sharedStrings.xml', data: Buffer.from(sst) }, { name: 'xl/worksheets/sheet1.xml', data: Buffer.from(sheet) }]);
    const r = await read(buf, 'no-refs.xlsx');
    expect(r).toEqual({
      skipped: 0,
      contacts: [
        { number: '9876543210', fields: { Name: 'Asha', Note: 'first' } },
        { number: '9123456789', fields: { Note: 'TRUE' } },
      ],
    });
  });

  it('reads numbers written as floats or in exponent form, inline strings, and takes the first sheet in workbook order', async () => {
    const second = sheetXml(
      '<row r="1"><c r="A1" t="inlineStr"><is><t>Contact</t></is></c><c r="B1" t="inlineStr"><is><t>Tel</t></is></c></row>' +
        '<row r="2"><c r="A2" t="inlineStr"><is><t>x &amp; y</t></is></c><c r="B2"><v>9876543210.0</v></c></row>' +
        '<row r="3"><c r="B3"><v>9.87654321E9</v></c></row>' +
        '<row r="5"><c r="A5" t="str"><f>A2</f><v>formula</v></c><c r="B5" t="inlineStr"><is><t>02079460958</t></is></c></row>',
    );
    const buf = zip([
      ...workbookParts([
        { name: 'First', file: 'sheet2.xml' },
        { name: 'Second', file: 'sheet1.xml' },
      ]),
      { name: 'xl/worksheets/sheet1.xml', data: Buffer.from(sheetXml('<row r="1"><c r="A1"><v>5550001111</v></c></row>')) },
      { name: 'xl/worksheets/sheet2.xml', data: Buffer.from(second) },
    ]);
    const r = await read(buf, 'odd.xlsx');
    expect(r.contacts).toEqual([
      { number: '9876543210', fields: { Contact: 'x & y' } },
      { number: '9876543210', fields: {} },
      { number: '02079460958', fields: { Contact: 'formula' } },
    ]);
  });

  it('keeps non-ASCII text intact over a large sheet (chunks are cut between characters)', async () => {
    const name = (i: number) => `Zoë Ñandú 東京 🎉 ${i}`;
    const buf = await streamedXlsx(20_000, (i) => [String(9_000_000_000 + i), name(i)]);
    const r = await read(buf, 'big.xlsx');
    expect(r.contacts.length).toBe(20_000);
    const bad = r.contacts.filter((c, i) => c.fields.name !== name(i) || c.number !== String(9_000_000_000 + i));
    expect(bad).toEqual([]);
  });

  it('does not keep rows alive while reading', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const buf = await streamedXlsx(40_000, (i) => [9_000_000_000 + i, `Customer ${i}`, 'some longer text to make a row weigh something']);
    const heap: number[] = [];
    await readContacts(stream(buf), 'x.xlsx', (c) => {
      if (c.number.endsWith('05000') || c.number.endsWith('39999')) {
        gc();
        heap.push(process.memoryUsage().heapUsed);
      }
    });
    expect(heap.length).toBe(2);
    expect(heap[1]! - heap[0]!).toBeLessThan(4 * 2 ** 20);
  });

  it('refuses files that are not xlsx workbooks', async () => {
    const pdf = Buffer.from('%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n', 'latin1');
    expect((await failure(read(pdf, 'x.xlsx'))).kind).toBe('invalid');
    expect((await failure(read(Buffer.alloc(0), 'x.xlsx'))).kind).toBe('invalid');
    const notWorkbook = zip([{ name: 'word/document.xml', data: Buffer.from('<w:document/>') }]);
    expect((await failure(read(notWorkbook, 'x.xlsx'))).message).toMatch(/workbook\.xml/);
    const good = await xlsx((wb) => wb.addWorksheet('S').addRow(['phone', '9876543210']));
    expect((await failure(read(good.subarray(0, good.length - 200), 'x.xlsx'))).kind).toBe('invalid');
    const corrupt = zip([
      ...workbookParts([{ name: 'S', file: 'sheet1.xml' }]),
      { name: 'xl/worksheets/sheet1.xml', data: Buffer.from(sheetXml('<row r="1"><c r="A1"><v>9876543210</v></c>')) },
    ]);
    expect((await failure(read(corrupt, 'x.xlsx'))).kind).toBe('invalid');
  });

  it('refuses a zip bomb declaring 500 MiB at once', async () => {
    const head = `<?xml version="1.0"?><worksheet ${NS}><sheetData><row r="1"><c r="A1"><v>9876543210</v></c></row>`;
    const tail = '</sheetData></worksheet>';
    const raw = bombStream(head, 500, tail);
    const buf = zip([
      ...workbookParts([{ name: 'S', file: 'sheet1.xml' }]),
      { name: 'xl/worksheets/sheet1.xml', data: Buffer.alloc(0), raw, size: head.length + 500 * 2 ** 20 + tail.length, crc: 0 },
    ]);
    const t = Date.now();
    const err = await failure(read(buf, 'bomb.xlsx'));
    expect(err.kind).toBe('invalid');
    expect(err.message).toMatch(/zip bomb/);
    expect(Date.now() - t).toBeLessThan(2_000);
  });

  it('stops a zip bomb whose directory lies about its size as soon as it outgrows the claim', async () => {
    const head = `<?xml version="1.0"?><worksheet ${NS}><sheetData><row r="1"><c r="A1"><v>9876543210</v></c></row>`;
    const raw = bombStream(head, 2000, '</sheetData></worksheet>'); // 2000 MiB from 2 MB
    const buf = zip([
      ...workbookParts([{ name: 'S', file: 'sheet1.xml' }]),
      { name: 'xl/worksheets/sheet1.xml', data: Buffer.alloc(0), raw, size: 10_000, crc: 0 },
    ]);
    const rss = process.memoryUsage().rss;
    const t = Date.now();
    const err = await failure(read(buf, 'bomb.xlsx'));
    expect(err.kind).toBe('invalid');
    expect(err.message).toMatch(/declared size/);
    expect(Date.now() - t).toBeLessThan(2_000);
    expect(process.memoryUsage().rss - rss).toBeLessThan(100 * 2 ** 20);
  });

  it('refuses a part whose content fails its CRC or falls short of its declared size', async () => {
    const sheet = Buffer.from(sheetXml('<row r="1"><c r="A1"><v>9876543210</v></c></row>'));
    const badCrc = zip([...workbookParts([{ name: 'S', file: 'sheet1.xml' }]), { name: 'xl/worksheets/sheet1.xml', data: sheet, crc: 12345 }]);
    expect((await failure(read(badCrc, 'x.xlsx'))).message).toMatch(/CRC/);
    const short = zip([...workbookParts([{ name: 'S', file: 'sheet1.xml' }]), { name: 'xl/worksheets/sheet1.xml', data: sheet, size: sheet.length + 10 }]);
    expect((await failure(read(short, 'x.xlsx'))).message).toMatch(/shorter than its declared size/);
  });

  it('refuses a sheet holding one huge cell, and more XML than the inflated-size limit', async () => {
    const big = sheetXml(`<row r="1"><c r="A1" t="inlineStr"><is><t>${'1234567890'.repeat(300_000)}</t></is></c></row>`);
    const buf = zip([...workbookParts([{ name: 'S', file: 'sheet1.xml' }]), { name: 'xl/worksheets/sheet1.xml', data: Buffer.from(big) }]);
    expect((await failure(read(buf, 'x.xlsx'))).message).toMatch(/over 1048576 bytes/);
    const err = await failure(read(buf, 'x.xlsx', { maxInflatedBytes: 1_000_000 }));
    expect(err.kind).toBe('too_large');
  });

  it('refuses more rows or bytes than the limits', async () => {
    const buf = await xlsx((wb) => {
      const ws = wb.addWorksheet('S');
      ws.addRow(['phone']);
      for (let i = 0; i < 4; i++) ws.addRow([9876543210 + i]);
    });
    expect((await read(buf, 'x.xlsx', { maxRows: 4 })).contacts.length).toBe(4);
    expect((await failure(read(buf, 'x.xlsx', { maxRows: 3 }))).kind).toBe('too_large');
    expect((await failure(read(buf, 'x.xlsx', { maxBytes: buf.length - 1 }))).kind).toBe('too_large');
  });
});

describe('readContacts: csv', () => {
  it('reads a BOM, semicolons, CRLF, quoted fields and leading zeros, also in 1-byte chunks', async () => {
    const csv =
      '\uFEFFName;Phone Number;Note;;Name\r\n' +
      '"Doe; John";"09876543210";"said ""hi""\r\nthen left";x;dup\r\n' +
      'Zoë;+44 (20) 7946-0958;;;\r\n' +
      ';;;;\r\n' + // blank: ignored
      'Ann;12345;short\r\n' +
      'Bob;;none\r\n' +
      '"Eve";"0 98.76.54.32.10"\r\n';
    for (const chunk of [1, 5, 64 * 1024]) {
      const r = await read(csv, 'contacts.CSV', undefined, chunk);
      expect(r.contacts).toEqual([
        { number: '09876543210', fields: { Name: 'Doe; John', Note: 'said "hi"\r\nthen left', 'column 4': 'x', 'column 5': 'dup' } },
        { number: '+442079460958', fields: { Name: 'Zoë' } },
        { number: '09876543210', fields: { Name: 'Eve' } },
      ]);
      expect(r.skipped).toBe(2);
    }
  });

  it('finds the number column of a header-less file by content, with commas and LF', async () => {
    const r = await read('Asha,0987654321,gold\nBen,(020) 7946-0958\nCara,n/a\nDan,+15550109999\n', 'list.csv');
    expect(r.contacts.map((c) => c.number)).toEqual(['0987654321', '02079460958', '+15550109999']);
    expect(r.contacts[0]!.fields).toEqual({ 'column 1': 'Asha', 'column 3': 'gold' });
    expect(r.skipped).toBe(1);
  });

  it('takes an unrecognised first row as the header when the column is found by content', async () => {
    const r = await read('Who,Tel\nAsha,0987654321\nBen,0987654322\n', 'a.csv');
    expect(r.contacts).toEqual([
      { number: '0987654321', fields: { Who: 'Asha' } },
      { number: '0987654322', fields: { Who: 'Ben' } },
    ]);
  });

  it('skips and counts invalid numbers; keeps odd headers as plain keys', async () => {
    const r = await read('__proto__,msisdn\nA,abc\nB,12345\nC,1234567890123456\nD,\nE,123456\n\n,\n', 'a.csv');
    expect(r.contacts).toEqual([{ number: '123456', fields: { ['__proto__']: 'E' } }]);
    expect(Object.getPrototypeOf(r.contacts[0]!.fields)).toBe(Object.prototype);
    expect(r.skipped).toBe(4);
  });

  it('reads CR line ends and rows of uneven length', async () => {
    const r = await read('name,phone\rAsha,0987654321,extra\rBen\rCara,0987654322\r', 'a.csv');
    expect(r.contacts).toEqual([
      { number: '0987654321', fields: { name: 'Asha', 'column 3': 'extra' } },
      { number: '0987654322', fields: { name: 'Cara' } },
    ]);
    expect(r.skipped).toBe(1);
  });

  it('reads Windows-1252 text', async () => {
    const r = await read(Buffer.from('name;phone\nZo\xeb;0987654321\n', 'latin1'), 'a.csv');
    expect(r.contacts).toEqual([{ number: '0987654321', fields: { name: 'Zoë' } }]);
  });

  it('refuses binary files, unknown extensions, files without a number column or rows, and broken quotes', async () => {
    expect((await failure(read(randomBytes(4096), 'x.csv'))).kind).toBe('invalid');
    expect((await failure(read('%PDF-1.4\n1 0 obj\n', 'x.csv'))).message).toMatch(/PDF/);
    expect((await failure(read(await xlsx((wb) => wb.addWorksheet('S').addRow(['phone'])), 'x.csv'))).kind).toBe('invalid');
    expect((await failure(read('phone\n0987654321\n', 'contacts.txt'))).kind).toBe('invalid');
    expect((await failure(read('phone\n0987654321\n', 'contacts'))).kind).toBe('invalid');
    expect((await failure(read('name,city\nAsha,Pune\n', 'x.csv'))).message).toMatch(/no number column/);
    expect((await failure(read('\uFEFF\r\n\r\n', 'x.csv'))).message).toMatch(/no rows/);
    expect((await failure(read('phone\n"0987654321\n', 'x.csv'))).message).toMatch(/never closed/);
  });

  it('accepts 100,000 data rows and refuses 100,001; refuses more bytes than the limit', async () => {
    const lines = (n: number) => 'phone,name\n' + Array.from({ length: n }, (_, i) => `0${9_000_000_000 + i},N${i}\n`).join('');
    let batches = 0;
    let batch: Contact[] = [];
    const result = await readContacts(stream(lines(100_000)), 'a.csv', (c) => {
      batch.push(c);
      if (batch.length === 1000) {
        batches++;
        batch = [];
      }
    });
    expect(result).toEqual({ contacts: 100_000, skipped: 0 });
    expect(batches).toBe(100);
    expect((await failure(read(lines(100_001), 'a.csv'))).kind).toBe('too_large');
    expect((await failure(read(lines(10), 'a.csv', { maxBytes: 100 }))).kind).toBe('too_large');
  });

  it('passes on an error thrown by the caller unchanged', async () => {
    const boom = new Error('store down');
    const p = readContacts(stream('phone\n0987654321\n'), 'a.csv', () => {
      throw boom;
    });
    await expect(p).rejects.toBe(boom);
  });
});
