/**
 * Rows of the first worksheet of an .xlsx held in memory, read as its XML streams out of the zip
 * (sheet-xml.ts: nothing but the cells' text kept), in batches of rows.
 *
 * Zip bombs: the workbook is at most `maxBytes` (10 MiB), so it is buffered and its zip directory read
 * first (yauzl, see zip.ts). Only four parts are decompressed at all: the workbook, its relationships, the
 * shared strings and the first worksheet. Before any of them is inflated, a part over 16 MiB that
 * expands more than 100:1 is refused as a bomb (`invalid`), and more than `maxInflatedBytes` in all
 * (256 MiB by default) as `too_large`. While inflating, a part that grows beyond the size the zip
 * declares is refused at once (`invalid`), so a lying directory cannot get further than its own claim;
 * and no XML text run or tag may exceed `maxXmlRun` bytes (the XML parser holds such a token whole).
 * The shared strings are read first, then the worksheet's rows are handed out as they are parsed.
 */
import path from 'node:path';
import { type Cell, invalid, tooLarge } from './errors.js';
import { sharedStrings as readSharedStrings, worksheetRows } from './sheet-xml.js';
import { inflateToString, openZip, xmlChunks, type ZipEntry } from './zip.js';

export interface XlsxLimits {
  /** Decompressed bytes of the parts read, in all. */
  readonly maxInflatedBytes: number;
  /** Longest XML text run or tag. */
  readonly maxXmlRun: number;
}

export const DEFAULT_XLSX_LIMITS: XlsxLimits = { maxInflatedBytes: 256 * 2 ** 20, maxXmlRun: 2 ** 20 };

const BOMB_RATIO = 100;
const BOMB_MIN_BYTES = 16 * 2 ** 20;
const MAX_METADATA_BYTES = 8 * 2 ** 20;

export async function* xlsxRows(buf: Buffer, limits: XlsxLimits = DEFAULT_XLSX_LIMITS): AsyncGenerator<Cell[][]> {
  if (buf.length >= 8 && buf.readUInt32BE(0) === 0xd0cf11e0) {
    throw invalid('not an xlsx workbook: this is a legacy .xls or a password-protected workbook');
  }
  const zip = await openZip(buf);
  const entries = zip.entries;
  const workbook = entries.get('xl/workbook.xml');
  const rels = entries.get('xl/_rels/workbook.xml.rels');
  if (!workbook || !rels) throw invalid('not an xlsx workbook: xl/workbook.xml or its relationships are missing');
  for (const e of [workbook, rels]) {
    if (e.uncompressedSize > MAX_METADATA_BYTES) throw invalid(`not a supported xlsx workbook: ${e.name} is too large`);
  }
  const workbookXml = await inflateToString(zip, workbook);
  const relsXml = await inflateToString(zip, rels);
  const { sheet, sharedStrings } = locateParts(workbookXml, relsXml, entries);

  const read = [workbook, rels, sheet, ...(sharedStrings ? [sharedStrings] : [])];
  for (const e of read) {
    if (e.uncompressedSize > BOMB_MIN_BYTES && e.uncompressedSize > BOMB_RATIO * e.compressedSize) {
      throw invalid(
        `not an acceptable xlsx workbook: ${e.name} expands from ${e.compressedSize} to ${e.uncompressedSize} bytes (zip bomb?)`,
      );
    }
  }
  const inflated = read.reduce((n, e) => n + e.uncompressedSize, 0);
  if (inflated > limits.maxInflatedBytes) {
    throw tooLarge(`the workbook expands to ${inflated} bytes of XML, over the limit of ${limits.maxInflatedBytes}`);
  }

  const xml = (e: ZipEntry) => xmlChunks(zip.inflate(e), e.name, limits.maxXmlRun);
  const strings = sharedStrings ? await readSharedStrings(xml(sharedStrings), sharedStrings.name) : [];
  yield* worksheetRows(xml(sheet), sheet.name, strings);
}

/** The first worksheet in workbook order, and the shared strings, from the workbook and its relationships. */
function locateParts(
  workbookXml: string,
  relsXml: string,
  entries: ReadonlyMap<string, ZipEntry>,
): { sheet: ZipEntry; sharedStrings: ZipEntry | undefined } {
  const targets = new Map<string, { type: string; target: string }>();
  let sharedStrings: ZipEntry | undefined;
  for (const m of relsXml.matchAll(/<(?:[\w.-]+:)?Relationship\b([^>]*)>/g)) {
    const attrs = attributes(m[1]!);
    const id = attrs.get('Id');
    const type = attrs.get('Type') ?? '';
    const target = attrs.get('Target');
    if (!id || !target || attrs.get('TargetMode') === 'External') continue;
    targets.set(id, { type, target });
    if (type.endsWith('/sharedStrings')) sharedStrings = entries.get(partName(target));
  }
  sharedStrings ??= entries.get('xl/sharedstrings.xml');
  const sheetsXml = /<(?:[\w.-]+:)?sheets\b[^>]*>([\s\S]*?)<\/(?:[\w.-]+:)?sheets>/.exec(workbookXml)?.[1] ?? '';
  for (const m of sheetsXml.matchAll(/<(?:[\w.-]+:)?sheet\b([^>]*)>/g)) {
    const attrs = attributes(m[1]!);
    const rid = [...attrs].find(([k]) => /^[\w.-]+:id$/.test(k))?.[1];
    const rel = rid === undefined ? undefined : targets.get(rid);
    if (!rel || !rel.type.endsWith('/worksheet')) continue; // e.g. a chart sheet
    const sheet = entries.get(partName(rel.target));
    if (sheet) return { sheet, sharedStrings };
  }
  throw invalid('not an xlsx workbook: it has no worksheet');
}

function attributes(s: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of s.matchAll(/([\w.:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g)) {
    out.set(m[1]!, decodeXml(m[2] ?? m[3] ?? ''));
  }
  return out;
}

function decodeXml(s: string): string {
  return s.replace(/&(lt|gt|amp|quot|apos|#\d+|#x[0-9a-f]+);/gi, (_, e: string) => {
    switch (e.toLowerCase()) {
      case 'lt': return '<';
      case 'gt': return '>';
      case 'amp': return '&';
      case 'quot': return '"';
      case 'apos': return "'";
      default: {
        const code = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
        return code <= 0x10ffff ? String.fromCodePoint(code) : '';
      }
    }
  });
}

/** A relationship target of xl/workbook.xml as a lower-cased part name. */
function partName(target: string): string {
  const p = target.startsWith('/') ? target.slice(1) : path.posix.join('xl', target);
  return path.posix.normalize(p).toLowerCase();
}
