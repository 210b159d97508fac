/**
 * What lets the PostgreSQL event store's subscriptions skip the server (see postgres.ts):
 * `OwnTail`, the events of this process's last groups as stored, and `LogListener`, the LISTEN
 * connection that says when another process stored more.
 */
import type pg from 'pg';
import type { RecordedEvent } from './port.js';
import { deepFreeze } from './sqlite-group.js';
import { openClient } from '../postgres.js';

/** An outcome of `append_events` per command. */
export type Outcome = { ok: [revision: number, position: number, stored: number][] } | { conflict: number; actual: number } | { dup: number; stream: string };

/** What `append_events` answers, with the JSON it was sent. */
export interface Sent {
  /** The log's head before the group. */
  start: number;
  outcomes: Outcome[];
  batch: string;
}

/** An append as sent to the server (and, parsed back, as the server stores it). */
export interface SentAppend {
  s: string;
  x: unknown;
  t: number;
  ev: { i: string; y: string; d: unknown; m: Record<string, unknown> | null }[];
}

/** Events kept at most. */
const KEEP = 4096;

/** The events of this process's last groups, at positions from+1 .. from+events.length with none missing. */
export class OwnTail {
  private events: RecordedEvent[] = [];
  private from = 0;

  /** The last position held (or, empty, where the next group must start to be held). */
  get end(): number {
    return this.from + this.events.length;
  }

  /** Up to `max` events after `after`, or null when the tail does not hold the next one. */
  read(after: number, max: number): RecordedEvent[] | null {
    if (after < this.from || after >= this.end) return null;
    return this.events.slice(after - this.from, after - this.from + max);
  }

  clear() {
    this.events = [];
  }

  /**
   * Keeps a group's stored events when it knows them all: every position from the group's start to
   * its last, and each append stored whole or not at all (one partly stored before, a retry, leaves
   * them unknown: the tail starts over). Made from the batch's JSON parsed back: the stored values.
   */
  remember(sent: Sent) {
    const stored: RecordedEvent[] = [];
    let whole = true;
    const commands = JSON.parse(sent.batch) as SentAppend[][];
    commands.forEach((appends, c) => {
      const o = sent.outcomes[c]!;
      if (!('ok' in o)) return;
      appends.forEach((a, i) => {
        const [revision, position, fresh] = o.ok[i]!;
        if (fresh === 0) return;
        if (fresh !== a.ev.length) whole = false;
        else a.ev.forEach((e, k) => stored.push(deepFreeze({ id: e.i, streamId: a.s, revision: revision - fresh + 1 + k, position: position - fresh + 1 + k, type: e.y, data: e.d, metadata: e.m ?? {}, time: a.t })));
      });
    });
    if (!whole || !stored.every((e, k) => e.position === sent.start + 1 + k)) {
      this.events = [];
    } else if (sent.start === this.end) {
      this.events.push(...stored);
    } else {
      this.events = stored;
      this.from = sent.start;
    }
    if (this.events.length > KEEP) {
      const drop = this.events.length - KEEP;
      this.events.splice(0, drop);
      this.from += drop;
    }
  }
}

/** How often the LISTEN connection asks the head (see LogListener). */
const HEARTBEAT_MS = 2000;

/**
 * One LISTEN connection, opened on `start` and opened again with back-off when lost. While it is up,
 * `notified` is the highest head any commit announced since it came up (or the head read then): a
 * subscription at or past it has nothing to read, since any later commit notifies. It asks the head
 * every HEARTBEAT_MS, which finds a commit whose notification never came and a connection that died
 * without a word (no answer in time: dropped and opened again).
 */
export class LogListener {
  notified = 0;
  up = false;
  private client: pg.Client | null = null;
  private started = false;
  private closed = false;

  constructor(
    private readonly url: string,
    private readonly channel: string,
    private readonly readHead: (client?: pg.Client) => Promise<number>,
    /** Called with the head a notification or heartbeat announced, and (null) after a reconnect. */
    private readonly heard: (head: number | null) => void,
  ) {}

  start() {
    if (this.started || this.closed) return;
    this.started = true;
    this.connect(100);
  }

  private connect(delay: number) {
    const client = openClient(this.url);
    this.client = client;
    let beat: NodeJS.Timeout | undefined;
    const lost = () => {
      clearInterval(beat);
      if (this.client !== client) return;
      this.client = null;
      this.up = false;
      void client.end().catch(() => {});
      if (this.closed) return;
      // Whatever was appended while no one listened is found by the next read.
      this.heard(null);
      const t = setTimeout(() => this.connect(Math.min(delay * 2, 5000)), delay);
      t.unref?.();
    };
    const announce = (head: number) => {
      if (head > this.notified) this.notified = head;
      this.heard(head);
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', (n) => announce(Number(n.payload)));
    client
      .connect()
      .then(() => client.query(`LISTEN ${this.channel}`))
      // Listening: every later commit notifies; what came before is up to the head read now.
      .then(() => this.readHead())
      .then((head) => {
        if (this.client !== client) return;
        if (head > this.notified) this.notified = head;
        this.up = true;
        this.heard(null);
        beat = setInterval(() => {
          let timer: NodeJS.Timeout | undefined;
          Promise.race([this.readHead(client), new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('no answer')), HEARTBEAT_MS * 2)))])
            .then(announce, lost)
            .finally(() => clearTimeout(timer));
        }, HEARTBEAT_MS);
        beat.unref?.();
      }, lost);
  }

  async close() {
    this.closed = true;
    this.up = false;
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {});
  }
}
