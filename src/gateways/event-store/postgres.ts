/**
 * PostgreSQL event store (DATABASE_URL, without EVENTSTORE_URL), on `pg`.
 *
 * Writes: group commit. Appends that arrive while a group is being stored (or in the same turn of
 * the event loop) go together as the next group: one call of an append function, one transaction,
 * one round trip, each command checked on its own: `append_plain` (postgres-plain.ts) for the usual
 * group, sent as arrays, `append_events` (postgres-schema.ts) for the rest. Every event
 * gets its id here, before the first attempt, so a group whose answer was lost (the connection
 * dropped) is sent again and its stored events are recognised by their ids, not written twice.
 *
 * Positions: the function appends under one advisory lock per log, so positions commit in order
 * and are dense; a reader never sees a position while an earlier one may still commit, and the
 * subscriptions can read "everything after my last position" without skipping anything.
 *
 * Subscriptions read pages of the log and wait for a wake-up: this process's own appends, a NOTIFY
 * from another process's (one LISTEN connection per store, reconnected when lost), or a poll.
 */
import { EventEmitter } from 'node:events';
import type pg from 'pg';
import {
  type AppendOptions,
  type AppendResult,
  type EventStore,
  type NewEvent,
  type ReadAllOptions,
  type ReadStreamOptions,
  type RecordedEvent,
  type StreamAppend,
  type Subscription,
  WrongExpectedRevisionError,
} from './port.js';
import { pollingSubscription } from './subscription.js';
import { deepFreeze, timeOrderedId } from './sqlite-group.js';
import { InFlight, LogListener, OwnTail, type Outcome, type Sent, type SentAppend } from './postgres-tail.js';
import { batchJson, jsonText, plainAppendDdl, plainArgs, plainSql } from './postgres-plain.js';
import { mergeAppends } from './kurrentdb-mapping.js';
import { APPEND_MS, timed, isTimeout, migrate, noNul, openPool, schemaName, type PgOptions } from '../postgres.js';
import { channelOf, eventLogDdl } from './postgres-schema.js';
import { backoffMs } from '../../domain/backoff.js';

export interface PostgresEventStoreOptions extends PgOptions {
  clock?: () => number;
  /** Safety net for wake-ups no NOTIFY brought (default 1000 ms). */
  pollMs?: number;
  log?: (level: 'warn' | 'info', message: string, details?: Record<string, unknown>) => void;
}

interface Row {
  position: number;
  id: string;
  stream_id: string;
  revision: number;
  type: string;
  data: unknown;
  metadata: Record<string, unknown> | null;
  time: number;
}


interface Pending {
  appends: StreamAppend[];
  sent: SentAppend[];
  resolve: (r: AppendResult[]) => void;
  reject: (err: unknown) => void;
}

/** Groups sent at once (each on a connection of its own; the server stores them one after the other). */
const WRITERS = 2;
/** Commands one group stores at most. */
const MAX_GROUP = 256;
/** Events a subscription reads a page. */
const PAGE = 500;
/** Sends of a group whose outcome was unknown (a lost connection) before its callers are failed. */
const ATTEMPTS = 3;

const COLUMNS = 'position, id, stream_id, revision, type, data, metadata, time';

const toRecorded = (r: Row): RecordedEvent => ({
  id: r.id,
  streamId: r.stream_id,
  revision: r.revision,
  position: r.position,
  type: r.type,
  data: r.data,
  metadata: r.metadata ?? {},
  time: r.time,
});

export class PostgresEventStore implements EventStore {
  private readonly emitter = new EventEmitter();
  private queue: Pending[] = [];
  /** Groups being stored (at most WRITERS), and whether one is about to start. */
  private drainers = 0;
  /** Groups sent and not yet answered and in the tail. */
  private readonly inflight = new InFlight();
  private scheduled = false;
  private closed = false;
  private readonly listener: LogListener;
  private readonly sql;
  private readonly counts = { commits: 0, appends: 0 };
  /** This process's last groups' events: a subscription woken by its own commit reads them here. */
  private readonly tail = new OwnTail();
  /** Page reads in flight by start position: subscriptions at the same place (most of them, at the head) share one query. */
  private readonly pages = new Map<number, Promise<RecordedEvent[]>>();
  /** Stream reads asked in this turn of the event loop, read together in one query (readStreams). */
  private streamReads: { streamId: string; from: number; max: number | null; resolve: (e: RecordedEvent[]) => void; reject: (err: unknown) => void }[] = [];
  /** The head query in flight, and the one callers that came after it was sent wait for. */
  private headNow: Promise<number> | null = null;
  private headNext: Promise<number> | null = null;

  private constructor(
    private readonly url: string,
    private readonly pool: pg.Pool,
    /** The appends' own connection: a group never waits behind reads for one. */
    private readonly writer: pg.Pool,
    private readonly schema: string,
    private readonly options: PostgresEventStoreOptions,
  ) {
    this.emitter.setMaxListeners(0);
    // Notifications of this process's own commits (already announced) wake no one. A notification
    // often comes before the answer of the group it announces: it is taken once the groups in flight
    // are answered and in the tail, or the subscriptions would read from the server what is in memory.
    this.listener = new LogListener(
      url,
      channelOf(schema),
      (client) => this.queryHead(client),
      (head) => {
        if (head === null || head > this.tail.end) this.emitter.emit('append');
      },
      (take) => this.inflight.after(take),
    );
    const s = schema;
    this.sql = {
      append: `SELECT ${s}.append_events($1::json) AS r`,
      plain: plainSql(s),
      readStream: `SELECT ${COLUMNS} FROM ${s}.events WHERE stream_id = $1 AND revision >= $2 ORDER BY revision LIMIT $3`,
      readStreams: `SELECT q.n, ${COLUMNS.split(', ').map((c) => `e.${c}`).join(', ')}
        FROM unnest($1::text[], $2::integer[], $3::integer[]) WITH ORDINALITY AS q(stream, from_rev, max, n)
        CROSS JOIN LATERAL (SELECT * FROM ${s}.events WHERE stream_id = q.stream AND revision >= q.from_rev ORDER BY revision LIMIT q.max) e
        ORDER BY q.n, e.revision`,
      readAll: `SELECT ${COLUMNS} FROM ${s}.events WHERE position > $1 ORDER BY position LIMIT $2`,
      head: `SELECT position FROM ${s}.log_head`,
    };
  }

  /** Connects, creates the schema's tables when missing. */
  static async open(url: string, options: PostgresEventStoreOptions = {}): Promise<PostgresEventStore> {
    const schema = schemaName(options.schema);
    if (schema.length > 50) throw new Error(`PostgreSQL schema name ${schema} is too long for its channel name`);
    const pool = openPool(url, options.max ?? 4);
    const writer = openPool(url, WRITERS);
    try {
      await migrate(pool, schema, eventLogDdl(schema) + plainAppendDdl(schema));
    } catch (err) {
      await pool.end().catch(() => {});
      await writer.end().catch(() => {});
      throw err;
    }
    return new PostgresEventStore(url, pool, writer, schema, options);
  }

  async appendToStream(streamId: string, events: NewEvent[], options: AppendOptions = {}): Promise<AppendResult> {
    const [result] = await this.appendToStreams([{ streamId, events, expectedRevision: options.expectedRevision ?? 'any' }]);
    return result!;
  }

  appendToStreams(appends: StreamAppend[]): Promise<AppendResult[]> {
    if (this.closed) return Promise.reject(new Error('event store is closed'));
    let merged: StreamAppend[];
    let sent: SentAppend[];
    try {
      // A stream named twice becomes one append (its second expectation checked against the first).
      merged = mergeAppends(appends);
      const time = (this.options.clock ?? Date.now)();
      // As JSON text now: a value JSON cannot hold fails this command alone, here.
      sent = merged.map((a) => ({
        s: noNul(a.streamId),
        x: a.expectedRevision,
        t: time,
        ev: a.events.map((e) => ({ i: noNul(e.id ?? timeOrderedId(time)), y: noNul(e.type), d: jsonText(e.data ?? null)!, m: e.metadata ? jsonText(e.metadata) : null })),
      }));
    } catch (err) {
      return Promise.reject(err);
    }
    if (merged.length === 0) return Promise.resolve([]);
    return new Promise<AppendResult[]>((resolve, reject) => {
      this.queue.push({
        appends: merged,
        sent,
        resolve: (results) => resolve(appends.map((a) => results[merged.findIndex((m) => m.streamId === a.streamId)]!)),
        reject,
      });
      // A second group goes out while the first is stored: it waits for the log's lock on the server,
      // already sent and planned-for, and takes it as soon as the first commits (its sync overlaps the
      // second's round trip). The rest of this turn's appends join the group.
      if (!this.scheduled && this.drainers < WRITERS) {
        this.scheduled = true;
        this.drainers++;
        setImmediate(() => {
          this.scheduled = false;
          void this.drain();
        });
      }
    });
  }

  /** Stores groups until none waits: each group is what arrived while the ones before were being stored. */
  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const group = this.queue.splice(0, MAX_GROUP);
        const id = this.inflight.add();
        try {
          let sent: Sent;
          try {
            sent = await this.send(group);
          } catch (err) {
            if (group.length === 1) group[0]!.reject(err);
            // One command the server refuses (a value it cannot store) fails the group: each alone, so it fails alone.
            else for (const p of group) await this.send([p]).then((o) => this.settle(p, o.outcomes[0]!), p.reject);
            this.tail.clear();
            continue;
          }
          this.counts.commits++;
          this.counts.appends += group.length;
          this.tail.remember(sent);
          group.forEach((p, i) => this.settle(p, sent.outcomes[i]!));
          this.emitter.emit('append');
        } finally {
          this.inflight.done(id);
        }
      }
    } finally {
      this.drainers--;
    }
  }

  private async send(group: Pending[]): Promise<Sent> {
    const commands = group.map((p) => p.sent);
    // Most groups go as arrays to append_plain; what it cannot take (a stream or id twice, an id
    // already stored) as JSON to append_events.
    const plain = plainArgs(commands);
    for (let attempt = 1; ; attempt++) {
      try {
        {
          if (plain) {
            const r = await this.writer.query<{ r: Omit<Sent, 'commands'> | null }>(timed({ name: `${this.schema}.plain`, text: this.sql.plain, values: plain }, APPEND_MS));
            if (r.rows[0]!.r) return { ...r.rows[0]!.r, commands };
          }
          const r = await this.writer.query<{ r: Omit<Sent, 'commands'> }>(timed({ name: `${this.schema}.append`, text: this.sql.append, values: [batchJson(commands)] }, APPEND_MS));
          return { ...r.rows[0]!.r, commands };
        }
      } catch (err) {
        // A server error (an SQLSTATE) is an answer; anything else may have lost one: the ids make a resend safe.
        if ((err as { code?: unknown }).code !== undefined && /^[0-9A-Z]{5}$/.test(String((err as { code: unknown }).code))) throw err;
        // Unreachable (no answer in time): a resend would wait as long again; the request answers 503 now.
        if (attempt >= ATTEMPTS || this.closed || isTimeout(err)) throw err;
        this.options.log?.('warn', 'event store: append outcome unknown; sending again', { attempt, err: String(err) });
        await new Promise((r) => setTimeout(r, backoffMs(attempt, { first: 100, max: 100 * 2 ** ATTEMPTS })));
      }
    }
  }

  private settle(p: Pending, o: Outcome) {
    if ('ok' in o) {
      p.resolve(o.ok.map(([nextExpectedRevision, position]) => ({ nextExpectedRevision, position })));
    } else if ('conflict' in o) {
      const a = p.appends[o.conflict]!;
      p.reject(new WrongExpectedRevisionError(a.streamId, a.expectedRevision, o.actual));
    } else {
      p.reject(new Error(`stream ${p.appends[o.dup]!.streamId}: an event id is already used in stream ${o.stream}`));
    }
  }

  /** Transactions and the appends they carried (what group commit saves); each commit is one sync of the server's WAL. */
  get stats(): { commits: number; appends: number; syncs: number; decoded: number } {
    return { ...this.counts, syncs: this.counts.commits, decoded: 0 };
  }

  /** Reads asked in the same turn (each command loads its stream) go as one query, not one each. */
  readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    if (this.closed) return Promise.reject(new Error('event store is closed'));
    return new Promise((resolve, reject) => {
      if (this.streamReads.length === 0) setImmediate(() => void this.readStreams());
      this.streamReads.push({ streamId: noNul(streamId), from: options.fromRevision ?? 0, max: options.maxCount ?? null, resolve, reject });
    });
  }

  private async readStreams(): Promise<void> {
    const reads = this.streamReads;
    this.streamReads = [];
    try {
      if (reads.length === 1) {
        const [q] = reads;
        const r = await this.pool.query<Row>(timed({ name: `${this.schema}.readStream`, text: this.sql.readStream, values: [q!.streamId, q!.from, q!.max] }));
        q!.resolve(r.rows.map(toRecorded));
        return;
      }
      const r = await this.pool.query<Row & { n: number }>(timed({
        name: `${this.schema}.readStreams`,
        text: this.sql.readStreams,
        values: [reads.map((q) => q.streamId), reads.map((q) => q.from), reads.map((q) => q.max)],
      }));
      const out = reads.map((): RecordedEvent[] => []);
      for (const row of r.rows) out[row.n - 1]!.push(toRecorded(row));
      reads.forEach((q, i) => q.resolve(out[i]!));
    } catch (err) {
      for (const q of reads) q.reject(err);
    }
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    const r = await this.pool.query<Row>({ name: `${this.schema}.readAll`, text: this.sql.readAll, values: [options.after ?? 0, options.maxCount ?? null] });
    return r.rows.map(toRecorded);
  }

  /**
   * One query at a time: a caller that comes while one is in flight waits for the next, sent when that
   * one is answered and shared by everyone who came meanwhile (its answer covers every append stored
   * before they asked). Read-your-writes asks on every turn of the event loop.
   */
  headPosition(): Promise<number> {
    if (this.closed) return Promise.reject(new Error('event store is closed'));
    if (!this.headNow) {
      this.headNow = this.queryHead().finally(() => (this.headNow = null));
      return this.headNow;
    }
    this.headNext ??= this.headNow
      .catch(() => {})
      .then(() => {
        this.headNext = null;
        this.headNow = this.queryHead().finally(() => (this.headNow = null));
        return this.headNow;
      });
    return this.headNext;
  }

  /** The head, from the pool or (the listener's heartbeat) on a given connection. */
  private async queryHead(client?: pg.Client): Promise<number> {
    const query = { name: `${this.schema}.head`, text: this.sql.head };
    const r = await (client ? client.query<{ position: number }>(query) : this.pool.query<{ position: number }>(timed(query)));
    return r.rows[0]?.position ?? 0;
  }

  subscribeToAll(options: { after?: number } = {}): Subscription {
    this.listener.start();
    return pollingSubscription({
      after: options.after ?? 0,
      readPage: (after) => this.page(after),
      onAppend: (listener) => {
        this.emitter.on('append', listener);
        return () => this.emitter.off('append', listener);
      },
      pollMs: this.options.pollMs ?? 1000,
      isClosed: () => this.closed,
    });
  }

  /** A subscription's page: read once for every subscription asking for it at the same time (the events are shared, frozen). */
  private page(after: number, waited = false): Promise<RecordedEvent[]> {
    const own = this.tail.read(after, PAGE);
    if (own) return Promise.resolve(own);
    // Nothing newer announced while the listener is up: any later commit will notify and wake it.
    if (this.listener.up && after >= this.tail.end && after >= this.listener.notified) return Promise.resolve([]);
    // A gap in the tail while groups are in flight: two groups answered out of order, most likely
    // (a subscription catching up from further back reads the server at once).
    if (!waited && this.inflight.size > 0 && after >= this.tail.start) return new Promise<void>((r) => this.inflight.after(r)).then(() => this.page(after, true));
    let p = this.pages.get(after);
    if (!p) {
      p = this.readAll({ after, maxCount: PAGE })
        .then((events) => events.map(deepFreeze))
        .finally(() => this.pages.delete(after));
      this.pages.set(after, p);
    }
    return p;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    // Appends already taken are stored (and answered) first.
    while (this.drainers > 0) await new Promise((r) => setTimeout(r, 5));
    this.closed = true;
    this.emitter.emit('append');
    await this.listener.close();
    await this.writer.end();
    await this.pool.end();
  }

  private assertOpen() {
    if (this.closed) throw new Error('event store is closed');
  }
}
