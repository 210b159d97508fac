/**
 * The sheet XML reader (sheet-xml.ts on xml-scan.ts) on its own: every construct it reads, fed in
 * chunks of every size down to one byte (a chunk may end anywhere: in a tag, a name, an attribute
 * value, a UTF-8 character), and the malformed input it refuses.
 */
import { describe, expect, it } from 'vitest';
import { sharedStrings, worksheetRows } from '../../src/gateways/spreadsheet/sheet-xml.js';
import { SpreadsheetError } from '../../src/gateways/spreadsheet/errors.js';

const NS = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"';

async function* chunks(xml: string | Buffer, size: number): AsyncGenerator<Buffer> {
  const b = typeof xml === 'string' ? Buffer.from(xml, 'utf8') : xml;
  for (let i = 0; i < b.length; i += size) yield b.subarray(i, i + size);
}

async function rows(sheetData: string, strings: string[] = [], size = 1 << 16, head = '') {
  const out: unknown[][] = [];
  for await (const batch of worksheetRows(chunks(`${head}<worksheet ${NS}><sheetData>${sheetData}</sheetData></worksheet>`, size), 'sheet1.xml', strings)) out.push(...batch);
  return out;
}

async function refusal(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SpreadsheetError);
  expect((err as SpreadsheetError).kind).toBe('invalid');
  return (err as SpreadsheetError).message;
}

describe('sheet XML', () => {
  const sheet =
    '<?xml version="1.0" encoding="UTF-8"?>\r\n<!-- a comment: <row> -->' +
    `<x:worksheet xmlns:x="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><x:sheetData>` +
    `<x:row r = '1' spans="1:3"><x:c r="A1" t="s"><x:v>0</x:v></x:c><x:c r='B1' t="inlineStr"><x:is><x:r><x:t xml:space="preserve">Zoë &amp; </x:t></x:r><x:r><x:t>東京 🎉&#33;&#x21;</x:t></x:r><x:rPh><x:t>ト</x:t></x:rPh></x:is></x:c></x:row>` +
    `<x:row><x:c><x:v>007</x:v></x:c><x:c t="s"><x:v> 1 </x:v></x:c><x:c t="s"><x:v>9</x:v></x:c><x:c r="E2" t="str"><x:f>A1</x:f><x:v>a&lt;b</x:v></x:c></x:row>` +
    `<x:row><x:c t="n"><x:v>9876543210</x:v></x:c><x:c><x:v><![CDATA[12]]><!-- x -->3</x:v></x:c><x:c t="b"><x:v>0</x:v></x:c><x:c/><x:c t="e"><x:v>#N/A</x:v></x:c></x:row>` +
    `<x:row/></x:sheetData></x:worksheet>\n`;
  const expected = [
    ['Phone', 'Zoë & 東京 🎉!!'],
    [7, 'Note', '', '', 'a<b'],
    [9876543210, 123, 'FALSE', '', '#N/A'],
    [],
  ];

  it('reads prefixed names, attributes in either quotes, inline and shared strings, numbers, CDATA and comments, in chunks of any size', async () => {
    for (const size of [1, 2, 3, 5, 7, 64, 1 << 16]) {
      const out: unknown[][] = [];
      for await (const batch of worksheetRows(chunks(sheet, size), 'sheet1.xml', ['Phone', 'Note'])) out.push(...batch);
      expect(out, `chunks of ${size}`).toEqual(expected);
    }
  });

  it('reads shared strings: rich runs joined, phonetic runs left out, entities decoded, a byte-order mark skipped', async () => {
    const sst = `\ufeff<?xml version="1.0"?><sst ${NS} count="3"><si><t>a &amp; b</t></si><si><r><t>No</t></r><r><t xml:space="preserve">te </t></r><rPh sb="0"><t>x</t></rPh></si><si><t/></si><si><t>line\r\nend</t></si></sst>`;
    for (const size of [1, 3, 1 << 16]) {
      expect(await sharedStrings(chunks(sst, size), 'sharedStrings.xml')).toEqual(['a & b', 'Note ', '', 'line\nend']);
    }
  });

  it('takes an empty or out-of-range shared-string index as an empty cell, and other number text as written', async () => {
    expect(await rows('<row><c t="s"><v>5</v></c><c t="s"><v></v></c><c><v>1.5E3</v></c><c><v>12345678901234567</v></c><c><v>x1</v></c></row>', ['a'])).toEqual([
      ['', '', 1500, 12345678901234567, 'x1'],
    ]);
  });

  it('refuses malformed XML in words of its own', async () => {
    const bad = [
      '<row><c><v>1</v></c>', // <row> not closed
      '<row><c><v>1</c></v></row>', // crossed
      '<row><c r="A1><v>1</v></c></row>', // attribute quote not closed
      '<row><c r=A1><v>1</v></c></row>', // no quotes
      '<row><c r="A1"t="s"><v>1</v></c></row>', // no space between attributes
      '<row><c><v>1 &bogus; </v></c></row>', // unknown entity
      '<row><c><v>1 & 2</v></c></row>', // bare ampersand
      '<row><c><v>1</v></c></row><!-- not closed',
      '<row><c><v>1</v></c></row></sheetData></worksheet><worksheet>', // a second root
    ];
    for (const data of bad) {
      for (const size of [1, 1 << 16]) expect(await refusal(rows(data, [], size)), data).toMatch(/^not a readable xlsx workbook: sheet1\.xml is not well-formed XML/);
    }
    expect(await sharedStrings(chunks(`<sst ${NS}><si><t>a</t></si></sst><!---->`, 1), 'sharedStrings.xml')).toEqual(['a']);
    expect(await refusal(sharedStrings(chunks(`<sst ${NS}><si><t>a</t></si></sst><!--`, 1), 'sharedStrings.xml'))).toMatch(/ends inside/);
    expect(await refusal(rows('', [], 1 << 16, '<!DOCTYPE worksheet [<!ENTITY a "aaaa">]>'))).toMatch(/DTD/);
    expect(await refusal(sharedStrings(chunks('', 1), 'sharedStrings.xml'))).toMatch(/holds no element/);
    expect(await refusal(sharedStrings(chunks('<sst><si><t>a</t></si>', 4), 'sharedStrings.xml'))).toMatch(/not closed/);
    expect(await refusal(rows('<row><c r="XFE1"><v>1</v></c></row>'))).toMatch(/beyond column 16384/);
  });

  it('answers mutated sheets with rows or a SpreadsheetError, never another error', async () => {
    // A fixed-seed PRNG: the same 600 mutations each run (bytes replaced, cut out or repeated).
    let seed = 29;
    const rnd = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    const base = Buffer.from(sheet, 'utf8');
    const alphabet = Buffer.from('<>/="\'&;!?[]-# \nrcvtsx:0123456789\u00e9');
    for (let k = 0; k < 600; k++) {
      let b = Buffer.from(base);
      for (let m = 1 + rnd(3); m > 0; m--) {
        const at = rnd(b.length);
        const op = rnd(3);
        if (op === 0) b[at] = alphabet[rnd(alphabet.length)]!;
        else if (op === 1) b = Buffer.concat([b.subarray(0, at), b.subarray(Math.min(b.length, at + 1 + rnd(8)))]);
        else b = Buffer.concat([b.subarray(0, at), b.subarray(at, at + rnd(12)), b.subarray(at)]);
      }
      const got = await (async () => {
        for await (const _ of worksheetRows(chunks(b, 1 + rnd(40)), 'sheet1.xml', ['Phone', 'Note'])) void _;
      })().then(
        () => undefined,
        (e: unknown) => e,
      );
      if (got !== undefined) expect(got, b.toString('utf8')).toBeInstanceOf(SpreadsheetError);
    }
  });

  it('hands the rows out in batches as chunks complete them, not all at the end', async () => {
    const data = Array.from({ length: 2000 }, (_, i) => `<row><c><v>${9_000_000_000 + i}</v></c></row>`).join('');
    let batches = 0;
    let n = 0;
    for await (const batch of worksheetRows(chunks(`<worksheet ${NS}><sheetData>${data}</sheetData></worksheet>`, 4096), 'sheet1.xml', [])) {
      batches++;
      n += batch.length;
    }
    expect(n).toBe(2000);
    expect(batches).toBeGreaterThan(10);
  });
});
