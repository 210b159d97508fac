/**
 * Call export (CONTRACT section 12): rows of ended calls streamed in four formats. Rows are read
 * from the analytics store in keyset pages, and every format writes them as they come, so memory
 * stays flat whatever the number of calls.
 */
import { PassThrough, Readable } from 'node:stream';
import { stringify } from 'csv-stringify';
import ExcelJS from 'exceljs';
import { invalid } from '../domain/errors.js';
import { EXPORT_COLUMNS } from './model.js';
import type { AnalyticsStore } from './store.js';

export const EXPORT_FORMATS = ['json', 'jsonl', 'csv', 'xlsx'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export const CONTENT_TYPES: Record<ExportFormat, string> = {
  json: 'application/json; charset=utf-8',
  jsonl: 'application/x-ndjson; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
};

export const MAX_RANGE_MS = 92 * 86_400_000;
const DAY_MS = 86_400_000;

/** [from, to) of an export or report: `to` defaults to now, `from` to a day before `to`. */
export function exportRange(now: number, from?: number, to?: number, maxMs = MAX_RANGE_MS): { from: number; to: number } {
  const end = to ?? now;
  const start = from ?? end - DAY_MS;
  if (start >= end) throw invalid('from must be earlier than to');
  if (end - start > maxMs) throw invalid(`from, to: the range is longer than ${Math.round(maxMs / DAY_MS)} days`);
  return { from: start, to: end };
}

export type ExportRow = Record<(typeof EXPORT_COLUMNS)[number], string | number | null>;

/** Rows of one service's calls that began in [from, to), oldest first. */
export function* exportRows(store: AnalyticsStore, svcId: number, from: number, to: number): Generator<ExportRow> {
  for (const row of store.callRows(svcId, from, to)) yield JSON.parse(row) as ExportRow;
}

/** A spreadsheet program would run a cell starting like this as a formula: prefix it with `'`. */
export function neutralise(value: string): string {
  return /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
}

const cellText = (v: string | number | null): string | null => (v === null ? null : String(v));

/** Joins small pieces into chunks of about 64 KiB: one write per chunk instead of one per row. */
function* chunked(pieces: Iterable<string>): Generator<string> {
  let buf = '';
  for (const p of pieces) {
    buf += p;
    if (buf.length >= 65_536) {
      yield buf;
      buf = '';
    }
  }
  if (buf) yield buf;
}

/** The export as a byte stream in `format`. */
export function exportStream(rows: Iterable<ExportRow>, format: ExportFormat): Readable {
  switch (format) {
    case 'json':
      return Readable.from(
        chunked(
          (function* () {
            let first = true;
            yield '[';
            for (const r of rows) {
              yield (first ? '' : ',') + JSON.stringify(r);
              first = false;
            }
            yield ']';
          })(),
        ),
      );
    case 'jsonl':
      return Readable.from(
        chunked(
          (function* () {
            for (const r of rows) yield `${JSON.stringify(r)}\n`;
          })(),
        ),
      );
    case 'csv': {
      const csv = stringify({
        header: true,
        columns: [...EXPORT_COLUMNS],
        record_delimiter: '\r\n',
        cast: { string: (v) => neutralise(v), number: (v) => neutralise(String(v)) },
      });
      const source = Readable.from(
        (function* () {
          for (const r of rows) {
            const out: Record<string, string> = {};
            for (const c of EXPORT_COLUMNS) out[c] = cellText(r[c]) ?? '';
            yield out;
          }
        })(),
      );
      source.on('error', (err) => csv.destroy(err));
      return source.pipe(csv);
    }
    case 'xlsx': {
      const out = new PassThrough();
      void writeXlsx(rows, out).catch((err) => out.destroy(err as Error));
      return out;
    }
  }
}

/** The zip's input: a PassThrough of readable-stream 2 (archiver's), hence its state read directly. */
interface SheetSink {
  once(event: 'drain', listener: () => void): unknown;
  _writableState: { needDrain: boolean; length: number };
}

/**
 * What the sheet's XML is written into: exceljs's stream buffer hands every full 64 KiB block to the
 * zip's input without looking at `write`'s answer, so that input is where rows pile up when the zip
 * or the client is slower than the rows.
 */
function sheetSink(sheet: ExcelJS.Worksheet): SheetSink | undefined {
  const sink = (sheet as unknown as { stream?: { pipes?: unknown[] } }).stream?.pipes?.[0] as Partial<SheetSink> | undefined;
  return sink && typeof sink.once === 'function' && typeof sink._writableState?.needDrain === 'boolean' ? (sink as SheetSink) : undefined;
}

const MAX_QUEUED = 2 ** 20;

/** One sheet named `calls`, the header row, then every value as text (exceljs's streaming writer). */
async function writeXlsx(rows: Iterable<ExportRow>, out: PassThrough): Promise<void> {
  const workbook = new ExcelJS.stream.xlsx.WorkbookWriter({ stream: out, useStyles: false, useSharedStrings: false });
  const sheet = workbook.addWorksheet('calls');
  sheet.addRow([...EXPORT_COLUMNS]).commit();
  const sink = sheetSink(sheet);
  let n = 0;
  for (const r of rows) {
    sheet.addRow(EXPORT_COLUMNS.map((c) => cellText(r[c]) ?? undefined)).commit();
    // Backpressure: the rows are made synchronously, and the zip compresses and writes only between
    // turns of the event loop. So every few hundred rows, give it a turn, and while the zip's input
    // is full (a slow client stops the zip, which stops reading it) wait until it has drained.
    if (++n % 200 === 0) {
      await new Promise(setImmediate);
      // Up to a MiB queued (its own high-water mark is 16 KiB: waiting at that would stall the zip).
      while (sink && sink._writableState.length > MAX_QUEUED && sink._writableState.needDrain) {
        await new Promise<void>((resolve) => sink.once('drain', resolve));
      }
      if (out.writableNeedDrain) await new Promise((resolve) => out.once('drain', resolve));
    }
  }
  sheet.commit();
  await workbook.commit();
}
