/**
 * Rows of the first worksheet of an .xlsx held in memory, read with exceljs's streaming reader.
 *
 * Zip bombs: the workbook is at most `maxBytes` (10 MiB), so it is buffered and its zip directory read
 * first (yauzl, see zip.ts). Only four parts are decompressed at all: the workbook, its relationships, the
 * shared strings and the first worksheet. Before any of them is inflated, a part over 16 MiB that
 * expands more than 100:1 is refused as a bomb (`invalid`), and more than `maxInflatedBytes` in all
 * (256 MiB by default) as `too_large`. While inflating, a part that grows beyond the size the zip
 * declares is refused at once (`invalid`), so a lying directory cannot get further than its own claim;
 * and no XML text run or tag may exceed `maxXmlRun` bytes (the XML parser holds such a token whole).
 * exceljs is then given the verified parts re-packed as a stored zip, shared strings before the sheet,
 * so it never inflates anything itself and never spools a worksheet to a temp file.
 */
import path from 'node:path';
import ExcelJS from 'exceljs';
import { type Cell, invalid, SpreadsheetError, tooLarge } from './errors.js';
import { inflateToString, openZip, storedZip, xmlChunks, type StoredPart, type ZipEntry } from './zip.js';

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
const EMPTY_SST = Buffer.from(
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n' +
    '<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="0" uniqueCount="0"></sst>',
);

export async function* xlsxRows(buf: Buffer, limits: XlsxLimits = DEFAULT_XLSX_LIMITS): AsyncGenerator<Cell[]> {
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

  const xmlPart = (name: string, e: ZipEntry): StoredPart => ({
    name,
    size: e.uncompressedSize,
    chunks: xmlChunks(zip.inflate(e), e.name, limits.maxXmlRun),
  });
  const whole = (name: string, content: Buffer): StoredPart => ({ name, size: content.length, chunks: [content] });
  const source = storedZip([
    whole('xl/_rels/workbook.xml.rels', Buffer.from(relsXml, 'utf8')),
    whole('xl/workbook.xml', Buffer.from(workbookXml, 'utf8')),
    sharedStrings ? xmlPart('xl/sharedStrings.xml', sharedStrings) : whole('xl/sharedStrings.xml', EMPTY_SST),
    xmlPart('xl/worksheets/sheet1.xml', sheet),
  ]);

  // `pipe` does not pass a source error on to exceljs's unzipper (it would wait forever), so every
  // step of the reader also ends when the source fails. (Not with Promise.race against one pending
  // promise: each race would leave a reaction on it, keeping every row alive.)
  let sourceError: unknown;
  let onSourceError: ((err: unknown) => void) | undefined;
  source.on('error', (err) => {
    sourceError ??= err;
    onSourceError?.(err);
  });
  const step = <T>(it: AsyncIterator<T>): Promise<IteratorResult<T>> =>
    new Promise((resolve, reject) => {
      if (sourceError !== undefined) return reject(sourceError);
      onSourceError = reject;
      it.next().then(
        (r) => {
          onSourceError = undefined;
          resolve(r);
        },
        (err: unknown) => {
          onSourceError = undefined;
          reject(err);
        },
      );
    });

  const reader = new ExcelJS.stream.xlsx.WorkbookReader(source, {
    worksheets: 'emit',
    sharedStrings: 'cache',
    hyperlinks: 'ignore',
    styles: 'ignore',
    entries: 'ignore',
  });
  const sheets = reader[Symbol.asyncIterator]();
  let rows: AsyncIterator<ExcelJS.Row> | undefined;
  try {
    let first = true;
    for (;;) {
      const s = await step(sheets).catch(rethrowAsInvalid);
      if (s.done) break;
      rows = s.value[Symbol.asyncIterator]();
      for (;;) {
        const r = await step(rows).catch(rethrowAsInvalid);
        if (r.done) break;
        if (first) yield rowCells(r.value);
      }
      rows = undefined;
      first = false;
    }
  } finally {
    source.destroy();
    void rows?.return?.(undefined).catch(() => {});
    void sheets.return?.(undefined).catch(() => {});
  }
}

function rethrowAsInvalid(err: unknown): never {
  if (err instanceof SpreadsheetError) throw err;
  const why = err instanceof Error ? err.message : String(err);
  throw invalid(`not a readable xlsx workbook: ${why.split('\n')[0]}`);
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

/** The cells of a row, column 1 first, with '' for empty cells; trailing empty cells dropped. */
function rowCells(row: ExcelJS.Row): Cell[] {
  const values = row.values as unknown[];
  const out: Cell[] = [];
  let last = 0;
  for (let i = 1; i < values.length; i++) {
    const c = cellValue(values[i]);
    out.push(c);
    if (c !== '') last = i;
  }
  out.length = last;
  return out;
}

/** Text or number of a cell value as exceljs reads it: plain, rich text, formula result, hyperlink, error. */
function cellValue(v: unknown): Cell {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : '';
  if (typeof v === 'boolean') return v ? 'TRUE' : 'FALSE';
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? '' : v.toISOString();
  if (typeof v === 'object') {
    const o = v as Record<string, unknown>;
    if (Array.isArray(o.richText)) {
      return o.richText.map((r: unknown) => String((r as { text?: unknown }).text ?? '')).join('');
    }
    if ('formula' in o || 'sharedFormula' in o) return cellValue(o.result);
    if ('text' in o) return cellValue(o.text);
    if ('error' in o) return String(o.error);
  }
  return String(v);
}
