/**
 * The two SpreadsheetML parts a contact list needs, read as their XML streams in (xml-scan.ts: a
 * tokenizer that makes nothing for the tags it is not asked about): the shared strings
 * (`xl/sharedStrings.xml`) and a worksheet's rows. Nothing but the text of cells is kept, and a
 * worksheet's rows are handed out as they complete, in batches (the rows each chunk completes).
 *
 * Cells and rows without the optional `r` attribute (several writers leave it out) take the place
 * after the previous one, as the format says. Cell values: a shared string (`t="s"`), inline text
 * (`inlineStr`, rich runs joined), a formula's string result (`str`), a boolean (`TRUE`/`FALSE`), an
 * error (`#N/A`), an ISO date (`d`, as written), or a number; phonetic runs (`rPh`) are not text.
 */
import { type Cell, invalid } from './errors.js';
import { wholeNumberAt, XmlScanner, type XmlHandler } from './xml-scan.js';

/** Excel's last column (XFD). */
const MAX_COLUMNS = 16_384;

/** The shared strings, in order. */
export async function sharedStrings(chunks: AsyncIterable<Buffer>, part: string): Promise<string[]> {
  const [SI, T, RPH] = [0, 1, 2];
  const out: string[] = [];
  let inSi = false;
  let phonetic = 0;
  let text = '';
  const handler: XmlHandler & { wantText: boolean } = {
    wantText: false,
    open(name, _tag, selfClosing) {
      if (name === SI) {
        inSi = true;
        text = '';
      } else if (name === RPH) phonetic++;
      else if (name === T && inSi && phonetic === 0 && !selfClosing) handler.wantText = true;
    },
    text(b, from, to, raw) {
      text += scanner.textOf(b, from, to, raw);
    },
    close(name) {
      if (name === T) handler.wantText = false;
      else if (name === RPH) phonetic--;
      else if (name === SI) {
        out.push(text);
        inSi = false;
      }
    },
  };
  const scanner = new XmlScanner(part, ['si', 't', 'rPh'], handler);
  for await (const chunk of chunks) scanner.write(chunk);
  scanner.end();
  return out;
}

/** A column number (1-based) from the letters a cell reference such as `AB12` starts with; 0 when there is none. */
function columnAt(b: Buffer, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) {
    const c = b[i]! | 0x20; // lower case
    if (c < 0x61 || c > 0x7a) break;
    n = n * 26 + (c - 0x60);
  }
  return n;
}

/**
 * The rows of a worksheet, column 1 first, '' for empty cells, trailing empty cells dropped: in
 * batches, the rows each chunk of XML completes (one hop of the async iteration a batch, not a row).
 */
export async function* worksheetRows(chunks: AsyncIterable<Buffer>, part: string, strings: readonly string[]): AsyncGenerator<Cell[][]> {
  const [ROW, C, V, T, RPH] = [0, 1, 2, 3, 4];
  let done: Cell[][] = [];
  let row: Cell[] | null = null;
  let column = 0;
  let type = '';
  // Where text goes inside the current cell: its <v>, or the <t> of inline text.
  let target = -1;
  let phonetic = 0;
  let value = '';
  let inline = '';
  // A <v> of a number or shared-string cell that is a plain whole number is read from its bytes
  // (most cells of a contact list): `number` >= 0, no text made.
  let number = -1;
  let pieces = 0;
  const handler: XmlHandler & { wantText: boolean } = {
    wantText: false,
    open(name, tag, selfClosing) {
      switch (name) {
        case ROW:
          row = [];
          column = 0;
          break;
        case C: {
          const r = tag.attrAt('r');
          const at = r < 0 ? 0 : columnAt(tag.bytes, r, tag.valueEnd);
          column = at > 0 ? at : column + 1;
          if (column > MAX_COLUMNS) throw invalid(`not a readable xlsx workbook: ${part} has a cell beyond column ${MAX_COLUMNS}`);
          const t = tag.attrAt('t');
          type = t < 0 ? '' : tag.valueEnd === t + 1 && tag.bytes[t] === 0x73 ? 's' : (tag.attr('t') ?? '');
          value = '';
          inline = '';
          number = -1;
          pieces = 0;
          break;
        }
        case V:
          if (!selfClosing) target = V;
          break;
        case RPH:
          phonetic++;
          break;
        case T:
          if (phonetic === 0 && !selfClosing) target = T;
          break;
      }
      handler.wantText = target >= 0;
    },
    text(b, from, to, raw) {
      if (target === V) {
        if (pieces++ === 0 && (type === 's' || type === '' || type === 'n')) {
          number = wholeNumberAt(b, from, to);
          if (number >= 0) return;
        }
        if (number >= 0) {
          value = String(number);
          number = -1;
        }
        value += scanner.textOf(b, from, to, raw);
      } else if (target === T) inline += scanner.textOf(b, from, to, raw);
    },
    close(name) {
      switch (name) {
        case V:
        case T:
          target = -1;
          handler.wantText = false;
          break;
        case RPH:
          phonetic--;
          break;
        case C: {
          if (!row) break;
          const cell = number >= 0 ? (type === 's' ? (strings[number] ?? '') : number) : cellValue(type, value, inline, strings);
          if (cell !== '') {
            while (row.length < column - 1) row.push('');
            row[column - 1] = cell;
          }
          break;
        }
        case ROW:
          if (row) done.push(row);
          row = null;
          break;
      }
    },
  };
  const scanner = new XmlScanner(part, ['row', 'c', 'v', 't', 'rPh'], handler);
  for await (const chunk of chunks) {
    scanner.write(chunk);
    // Rows completed by this chunk; handed over, so that none stays alive behind the reader.
    if (done.length > 0) {
      const batch = done;
      done = [];
      yield batch;
    }
  }
  scanner.end();
  if (done.length > 0) yield done;
}

function cellValue(type: string, v: string, inline: string, strings: readonly string[]): Cell {
  switch (type) {
    case 's': {
      if (v.trim() === '') return ''; // Number('') would be 0: the first string
      const i = Number(v.trim());
      return Number.isInteger(i) && i >= 0 && i < strings.length ? strings[i]! : '';
    }
    case 'inlineStr':
      return inline;
    case 'str':
    case 'e':
    case 'd':
      return v;
    case 'b':
      return v.trim() === '' ? '' : v.trim() === '1' || v.trim().toLowerCase() === 'true' ? 'TRUE' : 'FALSE';
    default: {
      if (v.trim() === '') return '';
      const n = Number(v.trim());
      return Number.isFinite(n) ? n : v.trim();
    }
  }
}
