/** Hand-made xlsx containers for upload tests: odd XML, bombs, lying directories. */
import zlib from 'node:zlib';

// A hand-made zip, for workbooks exceljs would not write: odd XML, bombs, lying directories.

export interface ZipPart {
  name: string;
  data: Buffer; // content, deflated here unless `raw` gives the compressed bytes
  raw?: Buffer;
  size?: number; // declared uncompressed size (default: the real one)
  crc?: number;
}

export function zip(parts: ZipPart[]): Buffer {
  const locals: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const p of parts) {
    const name = Buffer.from(p.name);
    const body = p.raw ?? zlib.deflateRawSync(p.data);
    const size = p.size ?? p.data.length;
    const crc = p.crc ?? zlib.crc32(p.data);
    const lh = Buffer.alloc(30);
    lh.writeUInt32LE(0x04034b50, 0);
    lh.writeUInt16LE(20, 4);
    lh.writeUInt16LE(8, 8);
    lh.writeUInt32LE(crc, 14);
    lh.writeUInt32LE(body.length, 18);
    lh.writeUInt32LE(size, 22);
    lh.writeUInt16LE(name.length, 26);
    const ch = Buffer.alloc(46);
    ch.writeUInt32LE(0x02014b50, 0);
    ch.writeUInt16LE(20, 4);
    ch.writeUInt16LE(20, 6);
    ch.writeUInt16LE(8, 10);
    ch.writeUInt32LE(crc, 16);
    ch.writeUInt32LE(body.length, 20);
    ch.writeUInt32LE(size, 24);
    ch.writeUInt16LE(name.length, 28);
    ch.writeUInt32LE(offset, 42);
    locals.push(lh, name, body);
    central.push(ch, name);
    offset += 30 + name.length + body.length;
  }
  const cd = Buffer.concat(central);
  const eocd = Buffer.alloc(22);
  eocd.writeUInt32LE(0x06054b50, 0);
  eocd.writeUInt16LE(parts.length, 8);
  eocd.writeUInt16LE(parts.length, 10);
  eocd.writeUInt32LE(cd.length, 12);
  eocd.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, eocd]);
}

export const NS = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"';
const REL = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';

export function workbookParts(sheets: Array<{ name: string; file: string }>): ZipPart[] {
  const wb = `<?xml version="1.0"?><workbook ${NS}><sheets>${sheets
    .map((s, i) => `<sheet name="${s.name}" sheetId="${i + 1}" r:id="rId${i + 1}"/>`)
    .join('')}</sheets></workbook>`;
  const rels = `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${sheets
    .map((s, i) => `<Relationship Id="rId${i + 1}" Type="${REL}/worksheet" Target="worksheets/${s.file}"/>`)
    .join('')}</Relationships>`;
  return [
    { name: 'xl/workbook.xml', data: Buffer.from(wb) },
    { name: 'xl/_rels/workbook.xml.rels', data: Buffer.from(rels) },
  ];
}

export const sheetXml = (rows: string) => `<?xml version="1.0"?><worksheet ${NS}><sheetData>${rows}</sheetData></worksheet>`;

/** A deflate stream of `head`, `mib` MiB of spaces and `tail`, built from one compressed MiB repeated. */
export function bombStream(head: string, mib: number, tail: string): Buffer {
  const flush = { finishFlush: zlib.constants.Z_SYNC_FLUSH };
  const block = zlib.deflateRawSync(Buffer.alloc(2 ** 20, 0x20), flush);
  return Buffer.concat([zlib.deflateRawSync(Buffer.from(head), flush), ...Array(mib).fill(block), zlib.deflateRawSync(Buffer.from(tail))]);
}

