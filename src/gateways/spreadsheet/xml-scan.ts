/**
 * A small streaming XML tokenizer for the two SpreadsheetML parts a contact list needs (the shared
 * strings and a worksheet), in place of a generic SAX parser: a 100,000-row sheet is ~1,000,000 tags,
 * and a parser that decodes all of it to text and makes a name, an object and an attribute map for
 * each tag spent most of an upload's read there. This one walks the UTF-8 bytes as they come out of
 * the zip; element names are matched against the few the reader asks for (an index, no string), and
 * an attribute or a text run is looked at only when the reader asks for it: as bytes (a cell's
 * number, its column letters) or as text (UTF-8 decoded, entities replaced).
 *
 * Still checked, so that a damaged part is refused rather than half-read: every tag is complete and
 * its attributes are `name="value"` or `name='value'`; close tags match their open tags; the part
 * ends with its root element closed; only the five predefined entities and character references are
 * known; no DTD (OPC forbids them, and they are how entity expansion attacks start); a comment,
 * processing instruction or CDATA section ends. Anything else is `invalid` naming the part. What it
 * does not check (the characters allowed in names, duplicate attributes) cannot make it misread a cell.
 */
import { invalid } from './errors.js';

/** The tag being opened (valid only during `XmlHandler.open`). */
export interface Tag {
  /** An attribute's value as text; undefined when the tag has none of that name. */
  attr(name: string): string | undefined;
  /** Where an attribute's value starts in `bytes` (it ends at `valueEnd`); -1 when there is none. */
  attrAt(name: string): number;
  readonly bytes: Buffer;
  readonly valueEnd: number;
}

export interface XmlHandler {
  /**
   * An element opens: `name` is the index of its local name (the prefix dropped) in the names the
   * scanner was given, -1 for any other. A self-closing element then closes at once.
   */
  open(name: number, tag: Tag, selfClosing: boolean): void;
  close(name: number): void;
  /**
   * Character data inside the root at bytes [from, to) of `b` (a whole run between two tags; CDATA
   * comes as it is, `raw`); called only while `wantText`. `textOf` makes it text.
   */
  text(b: Buffer, from: number, to: number, raw: boolean): void;
  readonly wantText: boolean;
}

/** An unfinished construct longer than this (a comment, a CDATA section) is refused. */
const MAX_CARRY = 4 * 2 ** 20;

const LT = 0x3c;
const GT = 0x3e;
const SLASH = 0x2f;
const EQ = 0x3d;
const QUOT = 0x22;
const APOS = 0x27;
const COLON = 0x3a;
// Whitespace is taken to be any control character or space (XML allows only four, and no other
// control character at all): lenient, and one comparison in the loops that run for every byte of a tag.
const SPACE = 0x20;
/** A byte of a name (not whitespace, '/', '>' or '='). */
const inName = (c: number): boolean => c > SPACE && c !== SLASH && c !== GT && c !== EQ;

/** FNV-1a of bytes [from, to): open and close tags are matched by it and the length. */
function hashOf(b: Buffer, from: number, to: number): number {
  let h = 0x811c9dc5;
  for (let i = from; i < to; i++) h = Math.imul(h ^ b[i]!, 0x01000193);
  return h >>> 0;
}

export class XmlScanner implements Tag {
  private carry: Buffer | undefined;
  private readonly hashes: number[] = []; // qualified names of the open elements
  private readonly lengths: number[] = [];
  private readonly codes: number[] = [];
  private sawRoot = false;
  private started = false;
  private readonly names: Buffer[];
  // The tag being opened, for the `Tag` methods.
  bytes: Buffer = Buffer.alloc(0);
  private attrStart = 0;
  private attrEnd = 0;
  valueEnd = 0;

  constructor(
    private readonly part: string,
    names: readonly string[],
    private readonly handler: XmlHandler,
  ) {
    this.names = names.map((n) => Buffer.from(n, 'latin1'));
  }

  private bad(what: string): never {
    throw invalid(`not a readable xlsx workbook: ${this.part} is not well-formed XML (${what})`);
  }

  /** The next piece of the part (cut anywhere). */
  write(chunk: Buffer): void {
    let b = this.carry ? Buffer.concat([this.carry, chunk]) : chunk;
    this.carry = undefined;
    if (!this.started) {
      if (b.length < 3) {
        this.carry = Buffer.from(b);
        return;
      }
      this.started = true;
      if (b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) b = b.subarray(3); // a byte-order mark
    }
    const stop = this.scan(b, false);
    if (stop < b.length) {
      if (b.length - stop > MAX_CARRY) this.bad('an unfinished comment, tag or section');
      this.carry = Buffer.from(b.subarray(stop)); // a copy: the chunk is not kept
    }
  }

  /** After the last piece. */
  end(): void {
    // What is left may still be whole (a short comment after the root): scanned once more as the end.
    if (this.carry && this.hashes.length === 0) {
      const b = this.carry;
      const stop = this.scan(b, true);
      this.carry = stop < b.length ? b.subarray(stop) : undefined;
    }
    const rest = this.carry;
    if (rest && (this.hashes.length > 0 || !isBlank(rest, 0, rest.length))) this.bad('it ends inside a tag or element');
    if (this.hashes.length > 0) this.bad('an element is not closed');
    if (!this.sawRoot) this.bad('it holds no element');
  }

  /** Handles every complete construct of `b`; returns where the first incomplete one starts. */
  private scan(b: Buffer, last = false): number {
    const h = this.handler;
    const len = b.length;
    let pos = 0;
    while (pos < len) {
      let lt = pos;
      while (lt < len && b[lt] !== LT) lt++;
      if (lt === len) return pos; // text whose end is not here yet
      if (lt > pos) {
        if (this.hashes.length === 0) {
          if (!isBlank(b, pos, lt)) this.bad('text outside the root element');
        } else if (h.wantText) h.text(b, pos, lt, false);
      }
      if (lt + 1 >= len) return lt;
      const c = b[lt + 1]!;
      if (c === SLASH) {
        let end = lt + 2;
        while (end < len && inName(b[end]!)) end++;
        let gt = end;
        while (gt < len && b[gt]! <= SPACE) gt++;
        if (gt >= len) return lt;
        if (b[gt] !== GT) this.bad('a close tag with more than a name');
        const depth = this.hashes.length;
        if (depth === 0) this.bad('a close tag without its open tag');
        if (this.lengths[depth - 1] !== end - lt - 2 || this.hashes[depth - 1] !== hashOf(b, lt + 2, end)) {
          this.bad(`</${b.toString('latin1', lt + 2, Math.min(end, lt + 42))}> does not close the element open`);
        }
        this.hashes.pop();
        this.lengths.pop();
        h.close(this.codes.pop()!);
        pos = gt + 1;
      } else if (c === 0x3f) {
        const end = b.indexOf('?>', lt + 2, 'latin1');
        if (end < 0) return lt;
        pos = end + 2;
      } else if (c === 0x21) {
        if (len - lt < 9 && !last) return lt;
        if (b[lt + 2] === 0x2d && b[lt + 3] === 0x2d) {
          const end = b.indexOf('-->', lt + 4, 'latin1');
          if (end < 0) return lt;
          pos = end + 3;
        } else if (b.toString('latin1', lt + 2, lt + 9) === '[CDATA[') {
          const end = b.indexOf(']]>', lt + 9, 'latin1');
          if (end < 0) return lt;
          if (this.hashes.length === 0) this.bad('a CDATA section outside the root element');
          if (h.wantText) h.text(b, lt + 9, end, true);
          pos = end + 3;
        } else if (b.toString('latin1', lt + 2, lt + 9) === 'DOCTYPE') {
          this.bad('a DTD');
        } else {
          this.bad('an unknown <! construct');
        }
      } else {
        const next = this.openTag(b, lt);
        if (next < 0) return lt;
        pos = next;
      }
    }
    return pos;
  }

  /** An open tag at `lt`: the index after it, or -1 when it does not end within `b`. */
  private openTag(b: Buffer, lt: number): number {
    const len = b.length;
    let i = lt + 1;
    let colon = -1;
    for (let c; i < len && inName((c = b[i]!)); i++) if (c === COLON) colon = i;
    if (i >= len) return -1;
    if (i === lt + 1) this.bad('a tag without a name');
    const nameEnd = i;
    // Attributes: whitespace, then name = "value" or 'value'.
    let selfClosing = false;
    for (;;) {
      let spaced = false;
      while (i < len && b[i]! <= SPACE) {
        i++;
        spaced = true;
      }
      if (i >= len) return -1;
      const c = b[i]!;
      if (c === GT) break;
      if (c === SLASH) {
        if (i + 1 >= len) return -1;
        if (b[i + 1] !== GT) this.bad('a "/" inside a tag');
        selfClosing = true;
        i++;
        break;
      }
      if (!spaced) this.bad('attributes not separated by whitespace');
      const an = i;
      while (i < len && inName(b[i]!)) i++;
      if (i === an) this.bad('an attribute without a name');
      while (i < len && b[i]! <= SPACE) i++;
      if (i >= len) return -1;
      if (b[i] !== EQ) this.bad('an attribute without a value');
      i++;
      while (i < len && b[i]! <= SPACE) i++;
      if (i >= len) return -1;
      const q = b[i]!;
      if (q !== QUOT && q !== APOS) this.bad('an attribute value without quotes');
      i++;
      while (i < len && b[i] !== q) i++;
      if (i >= len) return -1;
      i++;
    }
    if (this.hashes.length === 0) {
      if (this.sawRoot) this.bad('a second root element');
      this.sawRoot = true;
    }
    const code = this.codeOf(b, colon < 0 ? lt + 1 : colon + 1, nameEnd);
    this.bytes = b;
    this.attrStart = nameEnd;
    this.attrEnd = i;
    this.handler.open(code, this, selfClosing);
    if (selfClosing) this.handler.close(code);
    else {
      this.hashes.push(hashOf(b, lt + 1, nameEnd));
      this.lengths.push(nameEnd - lt - 1);
      this.codes.push(code);
    }
    return i + 1;
  }

  /** The index of the local name at [from, to) among the names asked for; -1 for another. */
  private codeOf(b: Buffer, from: number, to: number): number {
    const n = to - from;
    outer: for (let k = 0; k < this.names.length; k++) {
      const name = this.names[k]!;
      if (name.length !== n) continue;
      for (let j = 0; j < n; j++) if (b[from + j] !== name[j]) continue outer;
      return k;
    }
    return -1;
  }

  attrAt(name: string): number {
    const b = this.bytes;
    let i = this.attrStart;
    const end = this.attrEnd;
    while (i < end) {
      while (i < end && b[i]! <= SPACE) i++;
      const an = i;
      while (i < end && inName(b[i]!)) i++;
      let matches = i - an === name.length;
      for (let j = 0; matches && j < name.length; j++) matches = b[an + j] === name.charCodeAt(j);
      while (i < end && b[i] !== QUOT && b[i] !== APOS) i++;
      if (i >= end) return -1;
      const q = b[i]!;
      const from = i + 1;
      for (i = from; b[i] !== q; i++);
      if (matches) {
        this.valueEnd = i;
        return from;
      }
      i++;
    }
    return -1;
  }

  attr(name: string): string | undefined {
    const at = this.attrAt(name);
    return at < 0 ? undefined : this.textOf(this.bytes, at, this.valueEnd, false, true);
  }

  /** Bytes [from, to) of `b` as text: UTF-8, and (unless `raw`, CDATA) line ends as LF and entities replaced. */
  textOf(b: Buffer, from: number, to: number, raw: boolean, attribute = false): string {
    const t = b.toString('utf8', from, to);
    return raw ? t : decode(t, this, attribute);
  }

  /** For `decode`. */
  fail(what: string): never {
    this.bad(what);
  }
}

/**
 * The whole number written in bytes [from, to) of `b`: only digits, no leading zero (unless it is
 * "0"), at most 15 of them, so that it reads back as the same text; -1 otherwise.
 */
export function wholeNumberAt(b: Buffer, from: number, to: number): number {
  const n = to - from;
  if (n < 1 || n > 15 || (b[from] === 0x30 && n > 1)) return -1;
  let v = 0;
  for (let i = from; i < to; i++) {
    const d = b[i]! - 0x30;
    if (d < 0 || d > 9) return -1;
    v = v * 10 + d;
  }
  return v;
}

function isBlank(b: Buffer, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (b[i]! > SPACE) return false;
  return true;
}

const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

/**
 * Text or an attribute value as XML means it: line ends as LF (in an attribute, whitespace as
 * spaces), then entities and character references replaced (so that a reference keeps the character
 * it names).
 */
function decode(t: string, scanner: XmlScanner, attribute: boolean): string {
  if (t.indexOf('\r') >= 0) t = t.replace(/\r\n?/g, '\n');
  if (attribute && /[\t\n]/.test(t)) t = t.replace(/[\t\n]/g, ' ');
  if (t.indexOf('&') < 0) return t;
  let out = '';
  let from = 0;
  for (let amp = t.indexOf('&'); amp >= 0; amp = t.indexOf('&', from)) {
    const semi = t.indexOf(';', amp + 1);
    if (semi < 0 || semi - amp > 12) scanner.fail('an "&" that starts no entity');
    const e = t.slice(amp + 1, semi);
    let r = Object.hasOwn(ENTITIES, e) ? ENTITIES[e] : undefined;
    if (r === undefined) {
      const code = /^#x[0-9a-fA-F]+$/.test(e) ? parseInt(e.slice(2), 16) : /^#[0-9]+$/.test(e) ? parseInt(e.slice(1), 10) : NaN;
      if (!(code >= 0x1 && code <= 0x10ffff) || (code >= 0xd800 && code <= 0xdfff)) scanner.fail(`an unknown entity &${e.slice(0, 12)};`);
      r = String.fromCodePoint(code);
    }
    out += t.slice(from, amp) + r;
    from = semi + 1;
  }
  return out + t.slice(from);
}

