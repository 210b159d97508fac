/**
 * Just enough of the zip format to read an .xlsx safely. The upload is at most `maxBytes` (10 MiB), so
 * it is held in memory and its central directory is read first; only the parts the reader needs are
 * ever decompressed, each by our own inflater that counts what it produces, stops the moment a part
 * grows past the size the directory declares, and checks the CRC. The verified parts are handed to
 * exceljs re-packed as a *stored* zip stream, so exceljs's own unzipper never inflates anything.
 */
import { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { invalid } from './errors.js';

export interface ZipEntry {
  readonly name: string;
  readonly flags: number;
  readonly method: number;
  readonly crc32: number;
  readonly compressedSize: number;
  readonly uncompressedSize: number;
  readonly localOffset: number;
}

const EOCD_SIG = 0x06054b50;
const CDH_SIG = 0x02014b50;
const LFH_SIG = 0x04034b50;

/** The entries of a zip held in `buf`, keyed by lower-cased name (OPC part names ignore case). */
export function readZipDirectory(buf: Buffer): Map<string, ZipEntry> {
  const eocd = findEocd(buf);
  if (eocd < 0) throw invalid('not an xlsx workbook: the file is not a zip archive');
  const total = buf.readUInt16LE(eocd + 10);
  const cdSize = buf.readUInt32LE(eocd + 12);
  const cdOffset = buf.readUInt32LE(eocd + 16);
  if (total === 0xffff || cdOffset === 0xffffffff || cdSize === 0xffffffff) {
    throw invalid('not a supported xlsx workbook: zip64 archives are not accepted');
  }
  if (cdOffset + cdSize > eocd) throw invalid('not an xlsx workbook: the zip directory is damaged');
  const entries = new Map<string, ZipEntry>();
  let p = cdOffset;
  for (let i = 0; i < total; i++) {
    if (p + 46 > eocd || buf.readUInt32LE(p) !== CDH_SIG) {
      throw invalid('not an xlsx workbook: the zip directory is damaged');
    }
    const nameLen = buf.readUInt16LE(p + 28);
    const extraLen = buf.readUInt16LE(p + 30);
    const commentLen = buf.readUInt16LE(p + 32);
    const entry: ZipEntry = {
      flags: buf.readUInt16LE(p + 8),
      method: buf.readUInt16LE(p + 10),
      crc32: buf.readUInt32LE(p + 16),
      compressedSize: buf.readUInt32LE(p + 20),
      uncompressedSize: buf.readUInt32LE(p + 24),
      localOffset: buf.readUInt32LE(p + 42),
      name: buf.toString('utf8', p + 46, p + 46 + nameLen).replace(/\\/g, '/'),
    };
    if (entry.compressedSize === 0xffffffff || entry.uncompressedSize === 0xffffffff || entry.localOffset === 0xffffffff) {
      throw invalid('not a supported xlsx workbook: zip64 archives are not accepted');
    }
    entries.set(entry.name.toLowerCase(), entry);
    p += 46 + nameLen + extraLen + commentLen;
  }
  return entries;
}

function findEocd(buf: Buffer): number {
  const min = Math.max(0, buf.length - 22 - 0xffff);
  for (let i = buf.length - 22; i >= min; i--) {
    if (buf.readUInt32LE(i) === EOCD_SIG && i + 22 + buf.readUInt16LE(i + 20) <= buf.length) return i;
  }
  return -1;
}

/** The compressed bytes of an entry, after checking its local header. */
function compressedData(buf: Buffer, e: ZipEntry): Buffer {
  if (e.flags & 0x1) throw invalid(`not a supported xlsx workbook: ${e.name} is encrypted`);
  if (e.method !== 0 && e.method !== 8) {
    throw invalid(`not a supported xlsx workbook: ${e.name} uses compression method ${e.method}`);
  }
  const p = e.localOffset;
  if (p + 30 > buf.length || buf.readUInt32LE(p) !== LFH_SIG) {
    throw invalid(`not an xlsx workbook: the zip entry ${e.name} is damaged`);
  }
  const start = p + 30 + buf.readUInt16LE(p + 26) + buf.readUInt16LE(p + 28);
  const end = start + e.compressedSize;
  if (end > buf.length) throw invalid(`not an xlsx workbook: the zip entry ${e.name} is truncated`);
  return buf.subarray(start, end);
}

/**
 * The decompressed content of an entry, in chunks of at most 64 KiB. Throws `invalid` as soon as the
 * output exceeds the declared size, and at the end when the size or the CRC differ from the directory.
 */
export async function* inflateEntry(buf: Buffer, e: ZipEntry): AsyncGenerator<Buffer> {
  const data = compressedData(buf, e);
  const damaged = (why: string) => invalid(`not an xlsx workbook: the zip entry ${e.name} ${why}`);
  let produced = 0;
  let crc = 0;
  const check = (chunk: Buffer): void => {
    produced += chunk.length;
    if (produced > e.uncompressedSize) throw damaged('expands beyond its declared size (zip bomb?)');
    crc = zlib.crc32(chunk, crc);
  };
  if (e.method === 0) {
    for (let i = 0; i < data.length; i += 65536) {
      const chunk = data.subarray(i, i + 65536);
      check(chunk);
      yield chunk;
    }
  } else {
    // The inflater honours back-pressure: it only decompresses as far as we read.
    const inflater = zlib.createInflateRaw({ chunkSize: 65536 });
    inflater.end(data);
    try {
      for await (const chunk of inflater as AsyncIterable<Buffer>) {
        check(chunk);
        yield chunk;
      }
    } catch (err) {
      if (err instanceof Error && 'code' in err && String(err.code).startsWith('Z_')) {
        throw damaged(`does not decompress (${err.message})`);
      }
      throw err;
    } finally {
      inflater.destroy();
    }
  }
  if (produced !== e.uncompressedSize) throw damaged('is shorter than its declared size');
  if ((crc >>> 0) !== (e.crc32 >>> 0)) throw damaged('fails its CRC check');
}

/** A small entry as text (capped by the caller's size check). */
export async function inflateToString(buf: Buffer, e: ZipEntry): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of inflateEntry(buf, e)) chunks.push(c);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Cuts a stream of XML bytes only between UTF-8 characters (exceljs decodes each chunk on its own,
 * which would garble a character split across chunks), and refuses a text run or tag longer than
 * `maxRun` bytes: the XML parser keeps such a token whole in memory.
 */
export async function* xmlChunks(src: AsyncIterable<Buffer>, name: string, maxRun: number): AsyncGenerator<Buffer> {
  let carry: Buffer | undefined;
  let run = 0; // bytes since the last '<' or '>'
  for await (const raw of src) {
    const chunk = carry ? Buffer.concat([carry, raw]) : raw;
    carry = undefined;
    const lt = chunk.indexOf(0x3c);
    const gt = chunk.indexOf(0x3e);
    const first = lt < 0 ? gt : gt < 0 ? lt : Math.min(lt, gt);
    if (first < 0) run += chunk.length;
    else {
      run += first;
      if (run <= maxRun) run = chunk.length - 1 - Math.max(chunk.lastIndexOf(0x3c), chunk.lastIndexOf(0x3e));
    }
    if (run > maxRun) throw invalid(`not a supported xlsx workbook: ${name} holds a cell or tag over ${maxRun} bytes`);
    const cut = utf8Boundary(chunk);
    if (cut < chunk.length) {
      carry = Buffer.from(chunk.subarray(cut));
      if (cut > 0) yield chunk.subarray(0, cut);
    } else {
      yield chunk;
    }
  }
  if (carry) yield carry;
}

/** The largest index <= length at which `b` can be cut without splitting a UTF-8 sequence. */
function utf8Boundary(b: Buffer): number {
  for (let i = b.length - 1; i >= 0 && i >= b.length - 4; i--) {
    const byte = b[i]!;
    if ((byte & 0xc0) === 0x80) continue; // continuation byte
    const need = byte < 0x80 ? 1 : byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return i + need > b.length ? i : b.length;
  }
  return b.length;
}

export interface StoredPart {
  readonly name: string;
  readonly size: number;
  readonly chunks: AsyncIterable<Buffer> | Iterable<Buffer>;
}

/**
 * A zip stream holding `parts` uncompressed ("stored", sizes in the local headers), in this order,
 * closed by an empty end-of-directory record; what a streaming unzipper needs and no more. The size
 * of each part must be exact: the caller's chunks are checked against it.
 */
export function storedZip(parts: readonly StoredPart[]): Readable {
  async function* generate(): AsyncGenerator<Buffer> {
    for (const part of parts) {
      const name = Buffer.from(part.name, 'utf8');
      const header = Buffer.alloc(30);
      header.writeUInt32LE(LFH_SIG, 0);
      header.writeUInt16LE(20, 4); // version needed
      header.writeUInt16LE(0x0800, 6); // UTF-8 name
      header.writeUInt16LE(0, 8); // stored
      header.writeUInt32LE(part.size, 18);
      header.writeUInt32LE(part.size, 22);
      header.writeUInt16LE(name.length, 26);
      yield Buffer.concat([header, name]);
      let sent = 0;
      for await (const chunk of part.chunks) {
        sent += chunk.length;
        if (sent > part.size) throw invalid(`not an xlsx workbook: ${part.name} is larger than declared`);
        yield chunk;
      }
      if (sent !== part.size) throw invalid(`not an xlsx workbook: ${part.name} is shorter than declared`);
    }
    const eocd = Buffer.alloc(22);
    eocd.writeUInt32LE(EOCD_SIG, 0);
    yield eocd;
  }
  return Readable.from(generate(), { objectMode: false });
}
