/**
 * Dialer campaign files (CONTRACT sections 8 and 9): the contacts of an .xlsx or .csv upload, handed
 * out one by one as they are read.
 *
 * - The kind comes from the file name (`.xlsx` / `.csv`, any case); anything else, or a file that does
 *   not parse as that kind, is `SpreadsheetError('invalid')`.
 * - xlsx: the first worksheet (in workbook order), read as its XML streams in (sheet-xml.ts; cells and
 *   rows without their optional `r` attribute follow the one before); the upload is buffered (it is
 *   at most `maxBytes`) so that its zip directory can be checked for bombs first (see xlsx.ts). Numeric cells count like text (9876543210 → "9876543210"); rich text, formula results
 *   and hyperlinks give their text. Dates are not recognised (styles are not read): they give the
 *   spreadsheet's day number. CSV: streamed, see csv.ts.
 * - Rows whose every cell is blank are ignored: neither counted nor skipped nor a data row.
 * - The number column is the first whose header, in any case, contains `number`, `phone`, `mobile` or
 *   `msisdn`. Otherwise it is the first column where most of the rows after the first (up to 50 of
 *   them, or the first row alone if there is no other) hold a valid number; then the first row is data
 *   when it holds a valid number there, and the header otherwise. No such column: `invalid`, and so is
 *   a file with no rows at all.
 * - A number is valid when, without spaces, dashes, dots and brackets, it is 6 to 15 digits with an
 *   optional leading `+` (`PHONE_RE`); the contact carries it in that cleaned form. A numeric cell must
 *   hold a whole number. Data rows with an invalid or empty number are skipped and counted.
 * - `fields` holds the row's other non-blank cells (trimmed), keyed by their trimmed header; an empty
 *   or repeated header, a column beyond the header, and every column of a header-less file are keyed
 *   `column N` (N from 1).
 * - Limits: more than `maxRows` data rows (header and blank rows not counted) or more than `maxBytes`
 *   of input is `too_large`; so is an xlsx expanding to more XML than `maxInflatedBytes`.
 *
 * Errors are thrown as soon as they are found, so contacts may already have been handed out: a caller
 * that must not keep part of a bad file should collect (or stage) them and commit only on success.
 * The input stream is not destroyed on an error; the caller owns it.
 */
import path from 'node:path';
import type { Readable } from 'node:stream';
import { PHONE_RE } from '../../domain/phone.js';
import { csvRows } from './csv.js';
import { type Cell, invalid, tooLarge } from './errors.js';
import { DEFAULT_XLSX_LIMITS, xlsxRows } from './xlsx.js';

export { SpreadsheetError } from './errors.js';

export interface Contact {
  /** The number as a dialable string: digits with an optional leading `+`. */
  readonly number: string;
  /** The row's other non-blank cells by header (or `column N`). */
  readonly fields: Record<string, string>;
}

export interface ReadResult {
  /** Contacts handed to `onContact`. */
  readonly contacts: number;
  /** Data rows skipped for an invalid or empty number. */
  readonly skipped: number;
}

export interface ReadLimits {
  /** Data rows; default 100,000. */
  readonly maxRows?: number;
  /** Bytes of the upload; default 10 MiB. */
  readonly maxBytes?: number;
  /** Bytes of XML an xlsx may expand to (the parts read); default 256 MiB. */
  readonly maxInflatedBytes?: number;
}

export const DEFAULT_MAX_ROWS = 100_000;
export const DEFAULT_MAX_BYTES = 10 * 2 ** 20;

/** Rows looked at to find the number column of a file whose header names none. */
const LOOKAHEAD_ROWS = 50;
const HEADER_RE = /number|phone|mobile|msisdn/i;
const SEPARATORS_RE = /[\s\-\u2010-\u2015.()[\]]/g;

export async function readContacts(
  input: Readable,
  fileName: string,
  onContact: (contact: Contact) => void | Promise<void>,
  limits: ReadLimits = {},
): Promise<ReadResult> {
  const maxRows = limits.maxRows ?? DEFAULT_MAX_ROWS;
  const maxBytes = limits.maxBytes ?? DEFAULT_MAX_BYTES;
  const ext = path.extname(fileName.replace(/\\/g, '/')).toLowerCase();
  let rows: AsyncIterable<Cell[][]>;
  if (ext === '.csv') {
    rows = oneByOne(csvRows(limitBytes(input, maxBytes)));
  } else if (ext === '.xlsx') {
    const chunks: Buffer[] = [];
    for await (const chunk of limitBytes(input, maxBytes)) chunks.push(chunk);
    // One chunk (the reader thread hands the upload over whole) is not copied again.
    rows = xlsxRows(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), {
      ...DEFAULT_XLSX_LIMITS,
      ...(limits.maxInflatedBytes !== undefined ? { maxInflatedBytes: limits.maxInflatedBytes } : {}),
    });
  } else {
    throw invalid(`the file must be an .xlsx or .csv spreadsheet, not ${ext ? `a ${ext} file` : 'a file without extension'}`);
  }
  return contactsOf(rows, onContact, maxRows);
}

/** Rows as batches of one (the CSV reader hands them out one by one). */
async function* oneByOne(rows: AsyncIterable<Cell[]>): AsyncGenerator<Cell[][]> {
  for await (const row of rows) yield [row];
}

async function* limitBytes(input: Readable, maxBytes: number): AsyncGenerator<Buffer> {
  let total = 0;
  for await (const chunk of input as AsyncIterable<Buffer | string>) {
    const b = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    total += b.length;
    if (total > maxBytes) throw tooLarge(`the file is over the limit of ${maxBytes} bytes`);
    yield b;
  }
}

/** A valid number in a cell, cleaned; undefined when there is none. */
export function phoneIn(cell: Cell | undefined): string | undefined {
  if (cell === undefined) return undefined;
  const s = typeof cell === 'number' ? (Number.isSafeInteger(cell) && cell >= 0 ? String(cell) : '') : cell.replace(SEPARATORS_RE, '');
  return PHONE_RE.test(s) ? s : undefined;
}

const isBlank = (row: readonly Cell[]): boolean => row.every((c) => typeof c === 'string' && c.trim() === '');
const text = (c: Cell): string => (typeof c === 'number' ? String(c) : c.trim());

async function contactsOf(
  source: AsyncIterable<Cell[][]>,
  onContact: (contact: Contact) => void | Promise<void>,
  maxRows: number,
): Promise<ReadResult> {
  const it = source[Symbol.asyncIterator]();
  // Rows come in batches; a row at a time is taken from the batch at hand without an await.
  let batch: Cell[][] = [];
  let at = 0;
  const nextRow = async (): Promise<Cell[] | undefined> => {
    for (;;) {
      while (at < batch.length) {
        const row = batch[at++]!;
        if (!isBlank(row)) return row;
      }
      const r = await it.next();
      if (r.done) return undefined;
      batch = r.value;
      at = 0;
    }
  };
  try {
    const first = await nextRow();
    if (!first) throw invalid('the file holds no rows');

    let column = first.findIndex((c) => typeof c === 'string' && HEADER_RE.test(c));
    let header: readonly Cell[] | undefined = first;
    const pending: Cell[][] = [];
    if (column < 0) {
      for (let row; pending.length < LOOKAHEAD_ROWS && (row = await nextRow()); ) pending.push(row);
      const sample = pending.length > 0 ? pending : [first];
      const width = Math.max(...sample.map((r) => r.length));
      for (let c = 0; c < width && column < 0; c++) {
        const valid = sample.filter((r) => phoneIn(r[c]) !== undefined).length;
        if (valid * 2 > sample.length) column = c;
      }
      if (column < 0) {
        throw invalid('no number column: no header contains number, phone, mobile or msisdn, and no column mostly holds valid numbers');
      }
      if (phoneIn(first[column]) !== undefined) {
        header = undefined;
        pending.unshift(first);
      }
    }

    const keys = headerKeys(header ?? []);
    const keyOf = (c: number): string => keys[c] ?? uniqueKey(keys, c);
    let dataRows = 0;
    let contacts = 0;
    let skipped = 0;
    // A promise only when the caller's onContact gives one (an await a row is most of a small row's cost).
    const take = (row: Cell[]): void | Promise<void> => {
      if (++dataRows > maxRows) throw tooLarge(`the file holds more than ${maxRows} data rows`);
      const number = phoneIn(row[column]);
      if (number === undefined) {
        skipped++;
        return;
      }
      const entries: Array<[string, string]> = [];
      for (let c = 0; c < row.length; c++) {
        if (c === column) continue;
        const value = text(row[c]!);
        if (value !== '') entries.push([keyOf(c), value]);
      }
      contacts++;
      // fromEntries defines own properties, so a header like "__proto__" stays an ordinary key.
      return onContact({ number, fields: Object.fromEntries(entries) });
    };
    for (const row of pending.splice(0)) await take(row);
    for (;;) {
      while (at < batch.length) {
        const row = batch[at++]!;
        if (isBlank(row)) continue;
        const p = take(row);
        if (p) await p;
      }
      const r = await it.next();
      if (r.done) break;
      batch = r.value;
      at = 0;
    }
    return { contacts, skipped };
  } finally {
    await it.return?.();
  }
}

/** Field names by column: the trimmed header, or `column N` when it is empty or already taken. */
function headerKeys(header: readonly Cell[]): string[] {
  const keys: string[] = [];
  const used = new Set<string>();
  header.forEach((cell, c) => {
    const name = text(cell);
    keys[c] = name !== '' && !used.has(name) ? name : '';
    if (keys[c]) used.add(name);
  });
  header.forEach((_, c) => {
    if (!keys[c]) keys[c] = uniqueKey(keys, c);
  });
  return keys;
}

function uniqueKey(keys: string[], c: number): string {
  const taken = new Set(keys);
  let key = `column ${c + 1}`;
  for (let n = 2; taken.has(key); n++) key = `column ${c + 1} (${n})`;
  keys[c] = key;
  return key;
}
