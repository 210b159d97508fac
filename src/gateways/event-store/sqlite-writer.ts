/**
 * The embedded log's writer thread: the group commit (sqlite-group.ts) run on a thread of its own
 * (sqlite-thread.ts), with its own connection to the file. The platform thread hands over a group in
 * one message and gets back each command's outcome and the rows stored. Inserting, committing and
 * syncing a group was about an eighth of the platform thread's time per durable command; here it
 * runs beside it.
 *
 * The thread's connection syncs the WAL at each commit (synchronous=FULL), and SQLite makes a commit
 * visible to other connections only after that sync: whatever the platform thread (or another
 * process) reads of the log is on disk, and an answer comes back only for a durable group.
 */
import { openSqlite } from '../sqlite.js';
import { SqliteThread, pack, serveOnThread, unpack, type ThreadHandler } from '../sqlite-thread.js';
import { GroupWriter, type Committed, type InsertedRow, type Outcome, type PreparedAppend } from './sqlite-group.js';
import { WrongExpectedRevisionError, type AppendResult, type ExpectedRevision } from './port.js';

const TASK = 'event-store-writer';

/** A command's refusal as it crosses threads: a conflict stays a typed conflict; any other keeps its message. */
type WireError = { conflict: [streamId: string, expected: ExpectedRevision, actual: number] } | { message: string };
type WireOutcome = { ok: AppendResult[] } | { err: WireError };

const toWire = (err: unknown): WireError =>
  err instanceof WrongExpectedRevisionError ? { conflict: [err.streamId, err.expected, err.actual] } : { message: String((err as Error)?.message ?? err) };

const fromWire = (w: WireError): Error => ('conflict' in w ? new WrongExpectedRevisionError(...w.conflict) : new Error(w.message));

/**
 * A group as one string of fields (sqlite-thread.ts `pack`): its commands; per command its appends;
 * per append stream id, expected revision (a number, or ':' and its name), time, events; per event
 * id (null: the writer makes one), type, data, metadata.
 */
export function encodeGroup(group: PreparedAppend[][]): string {
  const out: (string | number | null)[] = [group.length];
  for (const appends of group) {
    out.push(appends.length);
    for (const a of appends) {
      out.push(a.streamId, typeof a.expectedRevision === 'number' ? a.expectedRevision : `:${a.expectedRevision}`, a.time, a.events.length);
      for (const e of a.events) out.push(e.id, e.type, e.data, e.metadata);
    }
  }
  return pack(out);
}

export function decodeGroup(text: string): PreparedAppend[][] {
  const f = unpack(text);
  let i = 0;
  const next = () => f[i++]!;
  const group: PreparedAppend[][] = new Array(Number(next()));
  for (let c = 0; c < group.length; c++) {
    const appends: PreparedAppend[] = (group[c] = new Array(Number(next())));
    for (let a = 0; a < appends.length; a++) {
      const streamId = next();
      const rev = next();
      const expectedRevision = (rev.startsWith(':') ? rev.slice(1) : Number(rev)) as ExpectedRevision;
      const time = Number(next());
      const events = new Array(Number(next()));
      for (let e = 0; e < events.length; e++) events[e] = { id: f[i++] ?? null, type: next(), data: next(), metadata: next() };
      appends[a] = { streamId, expectedRevision, time, events };
    }
  }
  return group;
}

/** This module: what the writer thread loads (compiled). */
export const writerThreadModule = new URL(import.meta.url);

/** The platform thread's side. */
export class WriterThread {
  private readonly thread: SqliteThread;

  /** `module`: this file's compiled JavaScript (tests may name a build's). */
  constructor(file: string, module: URL = writerThreadModule) {
    this.thread = new SqliteThread('event store writer', module, TASK, { file });
  }

  /**
   * Stores a group durably on the thread: each command's outcome and the rows stored. Rejects when
   * the commit itself failed (nothing stored) or the thread died before answering (unknown: a retry
   * finds out, by expected revisions and event ids).
   */
  async commit(group: PreparedAppend[][]): Promise<Committed & { head: number }> {
    const reply = JSON.parse(await this.thread.request(encodeGroup(group))) as { outcomes: WireOutcome[]; inserted: InsertedRow[]; head: number };
    return { outcomes: reply.outcomes.map((o): Outcome => ('ok' in o ? o : { err: fromWire(o.err) })), inserted: reply.inserted, head: reply.head };
  }

  /** Ends the thread (the caller waits for the group in flight first). */
  close(): Promise<void> {
    return this.thread.close();
  }
}

/** A group's answer: its outcomes and rows, and the last position the transaction that stored it wrote (0: none). */
const answer = (outcomes: Outcome[], inserted: InsertedRow[], head: number) =>
  JSON.stringify({ outcomes: outcomes.map((o): WireOutcome => ('ok' in o ? o : { err: toWire(o.err) })), inserted, head });

/** What the thread serves, on its own connection to `file` (exported for tests: it runs on any thread). */
export function writerHandler(file: string): ThreadHandler {
  const db = openSqlite(file, 'FULL');
  const writer = new GroupWriter(db);
  return {
    handle(text) {
      const { outcomes, inserted } = writer.commit(decodeGroup(text));
      return answer(outcomes, inserted, inserted.length > 0 ? inserted[inserted.length - 1]![3] : 0);
    },
    // Groups that queued while the last one was stored: one transaction and one sync for all of
    // them, each command still checked on its own; each group gets its own outcomes and rows back.
    handleBatch(texts) {
      const groups = texts.map(decodeGroup);
      const { outcomes, inserted } = writer.commit(groups.flat());
      const head = inserted.length > 0 ? inserted[inserted.length - 1]![3] : 0;
      const rows: InsertedRow[][] = groups.map(() => []);
      // Which group a command of the whole came from, and its index there.
      const groupOf: number[] = [];
      const indexIn: number[] = [];
      groups.forEach((g, gi) => g.forEach((_, ci) => (groupOf.push(gi), indexIn.push(ci))));
      for (const [c, a, e, position, id, revision] of inserted) rows[groupOf[c]!]!.push([indexIn[c]!, a, e, position, id, revision]);
      let at = 0;
      return groups.map((g, gi) => {
        const mine = outcomes.slice(at, at + g.length);
        at += g.length;
        return answer(mine, rows[gi]!, head);
      });
    },
    close: () => {
      db.close();
    },
  };
}

serveOnThread<{ file: string }>(TASK, ({ file }) => writerHandler(file));
