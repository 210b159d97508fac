/**
 * Replay's pages of the embedded log (SqliteEventStore.scanPages): one thread reads the log once and
 * hands each page to the threads that fold it, as one buffer of UTF-8 text, transferred (rows cloned
 * value by value to a worker cost about twice reading them again there, a string about half: both
 * measured); each thread then decodes only the events and the data it reads.
 *
 * A page is its events in position order, each `position US time US type US "streamId" US data`,
 * separated by RS (US and RS: the ASCII unit and record separators, 0x1F and 0x1E). The stream id
 * is JSON-quoted and the data is JSON text, so neither holds a separator; empty data means none.
 */
import { isAscii } from 'node:buffer';
import type { RecordedEvent } from './port.js';
import { NO_METADATA } from './sqlite-group.js';

export const UNIT = '\x1f';
export const RECORD = '\x1e';
const QUOTE = 34;
const MINUS = 45;
const ZERO = 48;
const BACKSLASH = '\\';

/**
 * The number written at page[from, to). An integer of up to 15 digits (exact in a double at every
 * step) is read digit by digit, without a string for it; anything else (a real, say) by Number.
 */
function integerAt(page: string, from: number, to: number): number {
  if (to - from > 15) return Number(page.slice(from, to));
  let v = 0;
  for (let k = page.charCodeAt(from) === MINUS ? from + 1 : from; k < to; k++) {
    const digit = page.charCodeAt(k) - ZERO;
    if (digit < 0 || digit > 9) return Number(page.slice(from, to));
    v = v * 10 + digit;
  }
  return page.charCodeAt(from) === MINUS ? -v : v;
}

/**
 * What a reader decodes of a page: the events of the types `only` names (all when null), with data
 * only for the types of `data` (all when null; the page must hold it).
 */
export interface PageFilter {
  only: ReadonlySet<string> | null;
  data: ReadonlySet<string> | null;
}

/**
 * Decodes the pages of one scan, in order. The type of an event is a string of its own and its data
 * is parsed into new values; only its stream id is a slice of the page (which it keeps alive): no
 * fold keeps an event's stream id.
 */
export class PageDecoder {
  private last = 0;
  private readonly types = new Map<string, string>();

  constructor(private readonly filter: PageFilter = { only: null, data: null }) {}

  /** The last position decoded (also of events filtered out). */
  get position(): number {
    return this.last;
  }

  /**
   * Hands each event of a page (its bytes as scanPages read them) to `apply`, in order. A callback,
   * not a generator: a million events' yields cost about 10% of decoding them (measured).
   */
  decode(bytes: Uint8Array, apply: (e: RecordedEvent) => void): void {
    const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    // Most pages are ASCII, which decodes at about three times the speed of UTF-8 (measured).
    const page = isAscii(buffer) ? buffer.toString('latin1') : buffer.toString('utf8');
    const { only, data: withData } = this.filter;
    const n = page.length;
    let i = 0;
    while (i < n) {
      let end = page.indexOf(RECORD, i);
      if (end < 0) end = n;
      const a = page.indexOf(UNIT, i);
      const b = page.indexOf(UNIT, a + 1);
      const c = page.indexOf(UNIT, b + 1);
      const d = page.indexOf(UNIT, c + 1);
      const position = integerAt(page, i, a);
      // Cheap checks that the page is what scanPages writes, in order (SQLite's group_concat keeps
      // its subquery's order; a page out of order must fail the replay, not fold wrong models).
      if (!(position > this.last) || a < 0 || d < 0 || d > end || page.charCodeAt(c + 1) !== QUOTE) {
        throw new Error(`event log page malformed or out of order after position ${this.last}`);
      }
      this.last = position;
      const type = this.typeOf(page.slice(b + 1, c));
      if (only === null || only.has(type)) {
        let streamId = page.slice(c + 2, d - 1);
        if (streamId.includes(BACKSLASH)) streamId = JSON.parse(page.slice(c + 1, d)) as string;
        const data = d + 1 < end && (withData === null || withData.has(type)) ? JSON.parse(page.slice(d + 1, end)) : null;
        apply({ id: '', streamId, revision: 0, position, type, data, metadata: NO_METADATA, time: integerAt(page, a + 1, b) });
      }
      i = end + 1;
    }
  }

  private typeOf(slice: string): string {
    let type = this.types.get(slice);
    if (type === undefined) {
      // A flat copy, not the slice.
      type = JSON.parse(JSON.stringify(slice)) as string;
      this.types.set(type, type);
    }
    return type;
  }
}
