/**
 * What lets the PostgreSQL event store's subscriptions skip the server (see postgres.ts):
 * `OwnTail`, the events of this process's last groups as stored, and `LogListener`, the LISTEN
 * connection that says when another process stored more.
 */
import type pg from 'pg';
import type { RecordedEvent } from './port.js';
import { deepFreeze } from './sqlite-group.js';
import { openClient } from '../postgres.js';

/** An outcome of `append_events` (and `append_plain`) per command. */
export type Outcome = { ok: [revision: number, position: number, stored: number][] } | { conflict: number; actual: number } | { dup: number; stream: string };

/** An append as sent to the server: data and metadata as the JSON text stored. */
export interface SentAppend {
  s: string;
  x: string | number;
  t: number;
  ev: { i: string; y: string; d: string; m: string | null }[];
}

/** What the append functions answer, with the commands they were sent. */
export interface Sent {
  /** The log's head before the group. */
  start: number;
  outcomes: Outcome[];
  commands: SentAppend[][];
}

/** Events kept at most. */
const KEEP = 4096;

/** A run of this process's events at positions from+1 .. from+events.length with none missing. */
interface Run {
  from: number;
  events: RecordedEvent[];
}

/**
 * The events of this process's last groups, as runs of consecutive positions (another process's
 * commits leave gaps between them; two groups in flight may be answered out of order).
 */
export class OwnTail {
  private runs: Run[] = [];

  /** The position the first run follows (Infinity when empty). */
  get start(): number {
    return this.runs[0]?.from ?? Infinity;
  }

  /** The last position held (0 when empty). */
  get end(): number {
    const last = this.runs.at(-1);
    return last ? last.from + last.events.length : 0;
  }

  /** Up to `max` events after `after`, or null when the tail does not hold the next one. */
  read(after: number, max: number): RecordedEvent[] | null {
    for (let i = this.runs.length - 1; i >= 0; i--) {
      const r = this.runs[i]!;
      if (after >= r.from + r.events.length) return null;
      if (after >= r.from) return r.events.slice(after - r.from, after - r.from + max);
    }
    return null;
  }

  clear() {
    this.runs = [];
  }

  /**
   * Keeps a group's stored events when it knows them all: every position from the group's start to
   * its last, and each append stored whole or not at all (one partly stored before, a retry, leaves
   * them unknown). The values are the JSON text sent parsed back: what the server stores.
   */
  remember(sent: Sent) {
    const stored: RecordedEvent[] = [];
    let whole = true;
    sent.commands.forEach((appends, c) => {
      const o = sent.outcomes[c]!;
      if (!('ok' in o)) return;
      appends.forEach((a, i) => {
        const [revision, position, fresh] = o.ok[i]!;
        if (fresh === 0) return;
        if (fresh !== a.ev.length) whole = false;
        else
          a.ev.forEach((e, k) =>
            stored.push(deepFreeze({ id: e.i, streamId: a.s, revision: revision - fresh + 1 + k, position: position - fresh + 1 + k, type: e.y, data: JSON.parse(e.d) as unknown, metadata: (e.m === null ? null : (JSON.parse(e.m) as Record<string, unknown> | null)) ?? {}, time: a.t })),
          );
      });
    });
    if (stored.length === 0) return;
    if (!whole || !stored.every((e, k) => e.position === sent.start + 1 + k)) {
      this.runs = [];
      return;
    }
    this.insert({ from: sent.start, events: stored });
    let total = 0;
    for (const r of this.runs) total += r.events.length;
    while (total > KEEP) {
      const first = this.runs[0]!;
      const drop = Math.min(first.events.length, total - KEEP);
      first.events.splice(0, drop);
      first.from += drop;
      total -= drop;
      if (first.events.length === 0) this.runs.shift();
    }
  }

  /** Puts a run in position order, joined to its neighbours where they touch. */
  private insert(run: Run) {
    let i = this.runs.length;
    while (i > 0 && this.runs[i - 1]!.from > run.from) i--;
    this.runs.splice(i, 0, run);
    for (let k = Math.max(1, i); k <= Math.min(i + 1, this.runs.length - 1); ) {
      const prev = this.runs[k - 1]!;
      const cur = this.runs[k]!;
      if (prev.from + prev.events.length === cur.from) {
        prev.events.push(...cur.events);
        this.runs.splice(k, 1);
      } else k++;
    }
  }
}

/** Groups in flight, by number, and what waits for the ones in flight at some moment. */
export class InFlight {
  private last = 0;
  private readonly open = new Set<number>();
  private held: { on: Set<number>; run: () => void }[] = [];

  get size(): number {
    return this.open.size;
  }

  add(): number {
    this.open.add(++this.last);
    return this.last;
  }

  /** Runs `run` once every group in flight now is done (at once when none is). */
  after(run: () => void) {
    if (this.open.size === 0) run();
    else this.held.push({ on: new Set(this.open), run });
  }

  done(id: number) {
    this.open.delete(id);
    if (this.held.length === 0) return;
    const due: (() => void)[] = [];
    this.held = this.held.filter((h) => {
      h.on.delete(id);
      if (h.on.size > 0) return true;
      due.push(h.run);
      return false;
    });
    for (const run of due) run();
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
    /** When an announced head is taken (default: at once). */
    private readonly defer: (take: () => void) => void = (take) => take(),
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
    const announce = (head: number) =>
      this.defer(() => {
        if (head > this.notified) this.notified = head;
        this.heard(head);
      });
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
