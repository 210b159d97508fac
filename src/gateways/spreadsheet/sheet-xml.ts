/**
 * The two SpreadsheetML parts a contact list needs, read with a SAX parser (saxes) as their XML
 * streams in: the shared strings (`xl/sharedStrings.xml`) and a worksheet's rows. Nothing but the
 * text of cells is kept, and a worksheet's rows are handed out as they complete.
 *
 * Cells and rows without the optional `r` attribute (several writers leave it out) take the place
 * after the previous one, as the format says. Cell values: a shared string (`t="s"`), inline text
 * (`inlineStr`, rich runs joined), a formula's string result (`str`), a boolean (`TRUE`/`FALSE`), an
 * error (`#N/A`), an ISO date (`d`, as written), or a number; phonetic runs (`rPh`) are not text.
 */
import { SaxesParser, type SaxesTagPlain } from 'saxes';
import { type Cell, invalid, SpreadsheetError } from './errors.js';

/** Excel's last column (XFD). */
const MAX_COLUMNS = 16_384;

const local = (name: string): string => {
  const i = name.indexOf(':');
  return i < 0 ? name : name.slice(i + 1);
};

/**
 * Feeds UTF-8 chunks to a parser; `flush` after the last one. A parse error becomes `invalid` naming
 * the part, in words of our own (the parser's text is for us, not for a client).
 */
function feeder(parser: SaxesParser<{ position: false; xmlns: false }>, part: string) {
  const decoder = new TextDecoder('utf-8');
  const fail = (err: unknown): never => {
    if (err instanceof SpreadsheetError) throw err;
    throw invalid(`not a readable xlsx workbook: ${part} is not well-formed XML`);
  };
  return {
    write(chunk: Buffer) {
      try {
        parser.write(decoder.decode(chunk, { stream: true }));
      } catch (err) {
        fail(err);
      }
    },
    flush() {
      try {
        parser.write(decoder.decode());
        parser.close();
      } catch (err) {
        fail(err);
      }
    },
  };
}

/** The shared strings, in order. */
export async function sharedStrings(chunks: AsyncIterable<Buffer>, part: string): Promise<string[]> {
  const out: string[] = [];
  const parser = new SaxesParser<{ position: false; xmlns: false }>({ position: false, xmlns: false });
  let inSi = false;
  let inT = false;
  let phonetic = 0;
  let text = '';
  parser.on('opentag', (tag: SaxesTagPlain) => {
    const name = local(tag.name);
    if (name === 'si') {
      inSi = true;
      text = '';
    } else if (name === 'rPh') phonetic++;
    else if (name === 't' && inSi && phonetic === 0) inT = !tag.isSelfClosing;
  });
  parser.on('text', (t) => {
    if (inT) text += t;
  });
  parser.on('cdata', (t) => {
    if (inT) text += t;
  });
  parser.on('closetag', (tag: SaxesTagPlain) => {
    const name = local(tag.name);
    if (name === 't') inT = false;
    else if (name === 'rPh') phonetic--;
    else if (name === 'si') {
      out.push(text);
      inSi = false;
    }
  });
  const feed = feeder(parser, part);
  for await (const chunk of chunks) feed.write(chunk);
  feed.flush();
  return out;
}

/** A column number (1-based) from a cell reference such as `AB12`; undefined when there is no letter. */
function columnOf(ref: string): number | undefined {
  let n = 0;
  let i = 0;
  for (; i < ref.length; i++) {
    const c = ref.charCodeAt(i) | 0x20; // lower case
    if (c < 0x61 || c > 0x7a) break;
    n = n * 26 + (c - 0x60);
  }
  return i === 0 ? undefined : n;
}

/** The rows of a worksheet, column 1 first, '' for empty cells, trailing empty cells dropped. */
export async function* worksheetRows(chunks: AsyncIterable<Buffer>, part: string, strings: readonly string[]): AsyncGenerator<Cell[]> {
  const parser = new SaxesParser<{ position: false; xmlns: false }>({ position: false, xmlns: false });
  const done: Cell[][] = [];
  let row: Cell[] | null = null;
  let column = 0;
  let type = '';
  // Where text goes inside the current cell: its <v>, or the <t> of inline text.
  let target: 'v' | 't' | null = null;
  let phonetic = 0;
  let value = '';
  let inline = '';
  parser.on('opentag', (tag: SaxesTagPlain) => {
    switch (local(tag.name)) {
      case 'row':
        row = [];
        column = 0;
        break;
      case 'c': {
        const ref = tag.attributes.r;
        const at = typeof ref === 'string' ? columnOf(ref) : undefined;
        column = at ?? column + 1;
        if (column > MAX_COLUMNS) throw invalid(`not a readable xlsx workbook: ${part} has a cell beyond column ${MAX_COLUMNS}`);
        type = typeof tag.attributes.t === 'string' ? tag.attributes.t : '';
        value = '';
        inline = '';
        break;
      }
      case 'v':
        if (!tag.isSelfClosing) target = 'v';
        break;
      case 'rPh':
        phonetic++;
        break;
      case 't':
        if (phonetic === 0 && !tag.isSelfClosing) target = 't';
        break;
    }
  });
  const onText = (t: string) => {
    if (target === 'v') value += t;
    else if (target === 't') inline += t;
  };
  parser.on('text', onText);
  parser.on('cdata', onText);
  parser.on('closetag', (tag: SaxesTagPlain) => {
    switch (local(tag.name)) {
      case 'v':
      case 't':
        target = null;
        break;
      case 'rPh':
        phonetic--;
        break;
      case 'c': {
        if (!row) break;
        const cell = cellValue(type, value, inline, strings);
        if (cell !== '') {
          while (row.length < column - 1) row.push('');
          row[column - 1] = cell;
        }
        break;
      }
      case 'row':
        if (row) done.push(row);
        row = null;
        break;
    }
  });
  const feed = feeder(parser, part);
  for await (const chunk of chunks) {
    feed.write(chunk);
    // Rows completed by this chunk; the array is emptied so that none stays alive behind the reader.
    for (const r of done.splice(0)) yield r;
  }
  feed.flush();
  for (const r of done.splice(0)) yield r;
}

function cellValue(type: string, v: string, inline: string, strings: readonly string[]): Cell {
  switch (type) {
    case 's': {
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
