/**
 * Rows of a CSV file, streamed, parsed by csv-parse. Around it, what spreadsheet exports need: fields
 * are separated by commas or semicolons (or tabs), whichever the first line holds most of outside
 * quotes; lines end in CRLF, LF or CR; quotes in the middle of a field are literal. Every field stays
 * text, so leading zeros survive. The text is UTF-8 (a byte-order mark is dropped); a file whose first
 * 64 KiB are not valid UTF-8 is read as Windows-1252, as older spreadsheet programs export it. Binary
 * content (a NUL byte anywhere, control characters, or the signature of a PDF, zip, image or legacy
 * Office file) is `invalid`, and so is a file csv-parse cannot read.
 */
import { Readable, pipeline } from 'node:stream';
import { CsvError, parse } from 'csv-parse';
import { invalid } from './errors.js';

const SNIFF_BYTES = 64 * 1024;

const SIGNATURES: ReadonlyArray<readonly [string, readonly number[]]> = [
  ['a PDF document', [0x25, 0x50, 0x44, 0x46]],
  ['a zip archive (an .xlsx?)', [0x50, 0x4b, 0x03, 0x04]],
  ['a zip archive', [0x50, 0x4b, 0x05, 0x06]],
  ['a legacy Office document', [0xd0, 0xcf, 0x11, 0xe0]],
  ['a PNG image', [0x89, 0x50, 0x4e, 0x47]],
  ['a GIF image', [0x47, 0x49, 0x46, 0x38]],
  ['a JPEG image', [0xff, 0xd8, 0xff]],
  ['UTF-16 text (save it as CSV UTF-8)', [0xff, 0xfe]],
  ['UTF-16 text (save it as CSV UTF-8)', [0xfe, 0xff]],
];

export async function* csvRows(chunks: AsyncIterable<Buffer>): AsyncGenerator<string[]> {
  const it = chunks[Symbol.asyncIterator]();
  const head: Buffer[] = [];
  let headLength = 0;
  let ended = false;
  while (headLength < SNIFF_BYTES) {
    const r = await it.next();
    if (r.done) {
      ended = true;
      break;
    }
    head.push(r.value);
    headLength += r.value.length;
  }
  let sniff = Buffer.concat(head);
  checkText(sniff);
  if (sniff[0] === 0xef && sniff[1] === 0xbb && sniff[2] === 0xbf) sniff = sniff.subarray(3);

  let decoder: TextDecoder;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(sniff, { stream: !ended });
    decoder = new TextDecoder('utf-8');
  } catch {
    decoder = new TextDecoder('latin1'); // the WHATWG label for Windows-1252
  }
  const first = decoder.decode(sniff, { stream: true });
  async function* text(): AsyncGenerator<string> {
    yield first;
    if (!ended) {
      for (;;) {
        const r = await it.next();
        if (r.done) break;
        if (r.value.includes(0)) throw invalid('not a CSV file: it holds binary data');
        yield decoder.decode(r.value, { stream: true });
      }
    }
    yield decoder.decode();
  }
  const parser = parse({
    delimiter: detectSeparator(first),
    relax_quotes: true,
    relax_column_count: true,
    skip_empty_lines: true,
  });
  // pipeline: an error on either side (a binary chunk, a parse error) ends the other, and a reader that
  // stops early ends both.
  pipeline(Readable.from(text()), parser, () => {});
  try {
    for await (const record of parser as AsyncIterable<string[]>) yield record;
  } catch (err) {
    if (err instanceof CsvError) throw invalid(describe(err));
    throw err;
  }
}

function describe(err: CsvError): string {
  if (err.code === 'CSV_QUOTE_NOT_CLOSED') {
    const line = (err as CsvError & { lines?: number }).lines;
    return `not a valid CSV file: a quoted field${line ? ` (line ${line})` : ''} is never closed`;
  }
  return `not a valid CSV file: ${err.message}`;
}

function checkText(b: Buffer): void {
  for (const [what, sig] of SIGNATURES) {
    if (b.length >= sig.length && sig.every((x, i) => b[i] === x)) throw invalid(`not a CSV file: this is ${what}`);
  }
  if (b.includes(0)) throw invalid('not a CSV file: it holds binary data');
  let control = 0;
  for (const x of b) if ((x < 0x20 && x !== 0x09 && x !== 0x0a && x !== 0x0d && x !== 0x0c) || x === 0x7f) control++;
  if (control > b.length / 100) throw invalid('not a CSV file: it holds binary data');
}

/** The separator the first record holds most of outside quotes: ',' then ';' then tab on a tie. */
export function detectSeparator(text: string): string {
  const counts = new Map<string, number>([[',', 0], [';', 0], ['\t', 0]]);
  let quoted = false;
  for (const ch of text) {
    if (ch === '"') quoted = !quoted;
    else if (!quoted && (ch === '\n' || ch === '\r')) break;
    else if (!quoted && counts.has(ch)) counts.set(ch, counts.get(ch)! + 1);
  }
  let best = ',';
  for (const [sep, n] of counts) if (n > counts.get(best)!) best = sep;
  return best;
}
