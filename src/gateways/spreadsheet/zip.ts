/**
 * Reading an uploaded .xlsx's zip safely, on yauzl. The upload is at most `maxBytes` (10 MiB), so it is
 * held in memory; yauzl reads its central directory, and only the parts the reader asks for are ever
 * decompressed, each as a stream that is stopped the moment it outgrows the size the directory
 * declares (and its CRC checked at the end).
 */
import zlib from 'node:zlib';
import yauzl from 'yauzl';
import { invalid, SpreadsheetError } from './errors.js';

/** Inflated bytes a chunk. */
const CHUNK_BYTES = 64 * 1024;

/** A stored (uncompressed) entry in chunks, as an inflated one comes. */
async function* storedChunks(b: Buffer): AsyncGenerator<Buffer> {
  for (let i = 0; i < b.length; i += CHUNK_BYTES) yield b.subarray(i, i + CHUNK_BYTES);
}

export interface ZipEntry {
  readonly name: string;
  readonly compressedSize: number;
  readonly uncompressedSize: number;
}

export interface Zip {
  /** The entries, keyed by lower-cased name (OPC part names ignore case). */
  readonly entries: Map<string, ZipEntry>;
  /**
   * The decompressed content of an entry, in chunks. Throws `invalid` as soon as the output exceeds
   * the declared size, and at the end when the size or the CRC differ from the directory.
   */
  inflate(entry: ZipEntry): AsyncGenerator<Buffer>;
}


/** yauzl's account of a broken archive, as the reader's `invalid`. */
const damaged = (err: unknown, what: string) => invalid(`not an xlsx workbook: ${what} ${err instanceof Error ? `(${err.message})` : ''}`.trim());

export async function openZip(buf: Buffer): Promise<Zip> {
  let zip: yauzl.ZipFile;
  try {
    zip = await yauzl.fromBufferPromise(buf, { lazyEntries: true, validateEntrySizes: true, strictFileNames: false });
  } catch (err) {
    throw damaged(err, 'the file is not a readable zip archive');
  }
  const raw = new Map<string, yauzl.Entry>();
  const entries = new Map<string, ZipEntry>();
  try {
    for await (const e of zip.eachEntry()) {
      const name = e.fileName.replace(/\\/g, '/');
      raw.set(name.toLowerCase(), e);
      entries.set(name.toLowerCase(), { name, compressedSize: e.compressedSize, uncompressedSize: e.uncompressedSize });
    }
  } catch (err) {
    throw damaged(err, 'the zip directory is damaged');
  }
  async function* inflate(entry: ZipEntry): AsyncGenerator<Buffer> {
    const e = raw.get(entry.name.toLowerCase())!;
    if (e.isEncrypted()) throw invalid(`not a supported xlsx workbook: ${entry.name} is encrypted`);
    if (!e.canDecodeFileData()) throw invalid(`not a supported xlsx workbook: ${entry.name} uses compression method ${e.compressionMethod}`);
    let start: number;
    try {
      ({ fileDataStart: start } = await zip.readLocalFileHeaderPromise(e, { minimal: true }));
    } catch (err) {
      throw damaged(err, `the zip entry ${entry.name} cannot be found`);
    }
    // The compressed bytes are in memory already: one inflate stream over them, in chunks of
    // CHUNK_BYTES (yauzl's own reading stream, 16 KiB inflate chunks and byte counter were three
    // stream hops a chunk, most of the inflate's cost on the reading thread).
    const compressed = buf.subarray(start, start + e.compressedSize);
    const stored = e.compressionMethod === 0;
    const stream: zlib.InflateRaw | undefined = stored ? undefined : zlib.createInflateRaw({ chunkSize: CHUNK_BYTES });
    let crc = 0;
    let produced = 0;
    try {
      stream?.end(compressed);
      const source: AsyncIterable<Buffer> = stream ?? storedChunks(compressed);
      for await (const chunk of source) {
        produced += chunk.length;
        if (produced > e.uncompressedSize) {
          throw invalid(`not an xlsx workbook: the zip entry ${entry.name} expands beyond its declared size (zip bomb?)`);
        }
        crc = zlib.crc32(chunk, crc);
        yield chunk;
      }
    } catch (err) {
      if (err instanceof SpreadsheetError) throw err;
      throw damaged(err, `the zip entry ${entry.name} does not decompress`);
    } finally {
      stream?.destroy();
    }
    if (produced !== e.uncompressedSize) throw invalid(`not an xlsx workbook: the zip entry ${entry.name} is shorter than its declared size`);
    if ((crc >>> 0) !== (e.crc32 >>> 0)) throw invalid(`not an xlsx workbook: the zip entry ${entry.name} fails its CRC check`);
  }
  return { entries, inflate };
}

/** A small entry as text (capped by the caller's size check). */
export async function inflateToString(zip: Zip, e: ZipEntry): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of zip.inflate(e)) chunks.push(c);
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
