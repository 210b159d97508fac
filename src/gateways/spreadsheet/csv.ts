/**
 * Rows of a CSV file, streamed. Fields are separated by commas or semicolons (or tabs), whichever the
 * first line holds most of outside quotes; lines end in CRLF, LF or CR; a field in double quotes may
 * hold separators, line breaks and doubled quotes. Every field stays text, so leading zeros survive.
 * The text is UTF-8 (a byte-order mark is dropped); a file whose first 64 KiB are not valid UTF-8 is
 * read as Windows-1252, as older spreadsheet programs export it. Binary content (a NUL byte anywhere,
 * control characters, or the signature of a PDF, zip, image or legacy Office file) is `invalid`.
 */
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
  const text = decoder.decode(sniff, { stream: true });
  const parser = new CsvParser(detectSeparator(text));
  yield* parser.feed(text);
  if (!ended) {
    for (;;) {
      const r = await it.next();
      if (r.done) break;
      if (r.value.includes(0)) throw invalid('not a CSV file: it holds binary data');
      yield* parser.feed(decoder.decode(r.value, { stream: true }));
    }
  }
  yield* parser.feed(decoder.decode());
  yield* parser.end();
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

/** An incremental RFC 4180 parser, lenient the way spreadsheet programs are. */
export class CsvParser {
  private row: string[] = [];
  private field = '';
  private started = false; // the field has content or opened a quote: a later quote is literal
  private quoted = false;
  private quotePending = false; // a quote inside quotes ended the last text: "" or the closing one?
  private skipLF = false;
  private records = 0;
  private quoteRecord = 0;
  private readonly stop: RegExp;

  constructor(private readonly sep: string) {
    this.stop = new RegExp(`[${sep === '\t' ? '\\t' : sep}\\r\\n]`, 'g');
  }

  *feed(s: string): Generator<string[]> {
    const n = s.length;
    let i = 0;
    if (n === 0) return;
    if (this.quotePending) {
      this.quotePending = false;
      if (s[0] === '"') {
        this.field += '"';
        i = 1;
      } else {
        this.quoted = false;
      }
    }
    while (i < n) {
      if (this.quoted) {
        const q = s.indexOf('"', i);
        if (q < 0) {
          this.field += s.slice(i);
          break;
        }
        this.field += s.slice(i, q);
        if (q + 1 === n) {
          this.quotePending = true;
          break;
        }
        if (s[q + 1] === '"') {
          this.field += '"';
          i = q + 2;
        } else {
          this.quoted = false;
          i = q + 1;
        }
        continue;
      }
      const ch = s[i]!;
      if (this.skipLF) {
        this.skipLF = false;
        if (ch === '\n') {
          i++;
          continue;
        }
      }
      if (ch === this.sep) {
        this.endField();
        i++;
      } else if (ch === '\n' || ch === '\r') {
        this.endField();
        yield this.endRecord();
        this.skipLF = ch === '\r';
        i++;
      } else if (ch === '"' && !this.started) {
        this.quoted = true;
        this.started = true;
        this.quoteRecord = this.records + 1;
        i++;
      } else {
        this.stop.lastIndex = i;
        const m = this.stop.exec(s);
        const j = m ? m.index : n;
        this.field += s.slice(i, j);
        this.started = true;
        i = j;
      }
    }
  }

  *end(): Generator<string[]> {
    if (this.quoted && !this.quotePending) {
      throw invalid(`not a valid CSV file: the quoted field opened in record ${this.quoteRecord} is never closed`);
    }
    if (this.started || this.row.length > 0) {
      this.endField();
      yield this.endRecord();
    }
  }

  private endField(): void {
    this.row.push(this.field);
    this.field = '';
    this.started = false;
  }

  private endRecord(): string[] {
    const row = this.row;
    this.row = [];
    this.records++;
    return row;
  }
}
