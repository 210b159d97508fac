/**
 * The analytics store: read models for analysts, kept beside the others because they need range
 * queries the document store does not offer (calls by start time, report rows by interval, the
 * latest snapshot before an instant). Embedded: one SQLite file, `DATA_DIR/analytics.db`.
 * Everything in it is derived from the log: `telephony replay` rebuilds it into a fresh file.
 */
import type Database from 'better-sqlite3';
import { RowBatch, openSqlite } from '../gateways/sqlite.js';
import { parseState, type TimelineState } from './timeline.js';

/** One agent's figures on one local day (additive). */
export interface AgentDayDelta {
  offered: number;
  answered: number;
  talkMs: number;
  loginMs: number;
  breakMs: number[]; // index 1..6
}

/** One service's figures in one local hour (additive). */
export interface ServiceHourDelta {
  inbound: number;
  outbound: number;
  answered: number;
  missed: number;
  abandoned: number;
  /** Inbound calls that entered the queue. */
  entered: number;
  /** Inbound calls answered by an agent after waiting in the queue, and their total wait. */
  waited: number;
  waitMs: number;
  /** Waits in whole seconds (rounded up) → calls, for any service-level threshold. */
  waits: Map<number, number>;
}

/** An agent's open login and break, so a report can count time up to now. */
export interface AgentOpen {
  svcId: number;
  agentId: number;
  timezone: string;
  loginSince: number | null;
  breakCode: number | null;
  breakSince: number | null;
}

export interface AgentDayRow {
  agentId: number;
  offered: number;
  answered: number;
  talkMs: number;
  loginMs: number;
  breakMs: number[];
}

export interface ServiceHourRow {
  hourStart: number;
  inbound: number;
  outbound: number;
  answered: number;
  missed: number;
  abandoned: number;
  entered: number;
  waited: number;
  waitMs: number;
}

/** Everything one flush writes, with the checkpoint, in one transaction. */
export interface AnalyticsWrite {
  calls: { svcId: number; startTime: number; xnid: string; row: string }[];
  agentDays: Map<string, { svcId: number; agentId: number; dayStart: number; d: AgentDayDelta }>;
  serviceHours: Map<string, { svcId: number; hourStart: number; d: ServiceHourDelta }>;
  agentOpen: Map<string, AgentOpen>;
  /** Open calls changed by this write (null: ended), serialised when written. */
  openCalls: Map<string, object | null>;
  /** Every SNAPSHOT_EVERY events: the boundary, and the state of each service changed since the last one. */
  boundaries: { position: number; time: number }[];
  snapshots: { svcId: number; position: number; state: string }[];
  /** The checkpoint this write starts from: it is refused if the stored one has moved (another writer). */
  from: number;
  position: number;
}

/** Another process wrote the analytics store since this writer read its checkpoint. */
export class CheckpointMovedError extends Error {
  constructor(expected: number, actual: number) {
    super(`analytics checkpoint moved from ${expected} to ${actual}: another process keeps this store`);
    this.name = 'CheckpointMovedError';
  }
}

export const emptyWrite = (position: number): AnalyticsWrite => ({
  calls: [],
  agentDays: new Map(),
  serviceHours: new Map(),
  agentOpen: new Map(),
  openCalls: new Map(),
  boundaries: [],
  snapshots: [],
  from: position,
  position,
});

// Each row adds to the one stored under its key, if any (also to one written earlier in the same statement).
const ADD_AGENT_DAY = `ON CONFLICT (svc_id, day_start, agent_id) DO UPDATE SET
  offered = offered + excluded.offered, answered = answered + excluded.answered, talk_ms = talk_ms + excluded.talk_ms,
  login_ms = login_ms + excluded.login_ms, b1 = b1 + excluded.b1, b2 = b2 + excluded.b2, b3 = b3 + excluded.b3,
  b4 = b4 + excluded.b4, b5 = b5 + excluded.b5, b6 = b6 + excluded.b6`;
const ADD_SERVICE_HOUR = `ON CONFLICT (svc_id, hour_start) DO UPDATE SET
  inbound = inbound + excluded.inbound, outbound = outbound + excluded.outbound, answered = answered + excluded.answered,
  missed = missed + excluded.missed, abandoned = abandoned + excluded.abandoned, entered = entered + excluded.entered,
  waited = waited + excluded.waited, wait_ms = wait_ms + excluded.wait_ms`;
const ADD_WAIT = 'ON CONFLICT (svc_id, hour_start, wait_s) DO UPDATE SET calls = calls + excluded.calls';

export class AnalyticsStore {
  readonly db: Database.Database;
  private readonly s;
  /** The additive rows of a write, many a statement. */
  private readonly batches: Record<'calls' | 'agentDays' | 'serviceHours' | 'waits', RowBatch>;
  /** Made once: a transaction wrapper per write showed in profiles (one write per projector batch). */
  private readonly writeTx: (w: AnalyticsWrite) => void;
  private readonly readTx: <T>(read: () => T) => T;

  constructor(readonly file: string) {
    this.db = openSqlite(file, 'NORMAL');
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS call_rows (svc_id INTEGER NOT NULL, start_time INTEGER NOT NULL, xnid TEXT NOT NULL, row TEXT NOT NULL,
        PRIMARY KEY (svc_id, start_time, xnid)) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS agent_days (svc_id INTEGER NOT NULL, agent_id INTEGER NOT NULL, day_start INTEGER NOT NULL,
        offered INTEGER NOT NULL, answered INTEGER NOT NULL, talk_ms INTEGER NOT NULL, login_ms INTEGER NOT NULL,
        b1 INTEGER NOT NULL, b2 INTEGER NOT NULL, b3 INTEGER NOT NULL, b4 INTEGER NOT NULL, b5 INTEGER NOT NULL, b6 INTEGER NOT NULL,
        PRIMARY KEY (svc_id, day_start, agent_id)) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS agent_open (svc_id INTEGER NOT NULL, agent_id INTEGER NOT NULL, timezone TEXT NOT NULL,
        login_since INTEGER, break_code INTEGER, break_since INTEGER, PRIMARY KEY (svc_id, agent_id)) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS service_hours (svc_id INTEGER NOT NULL, hour_start INTEGER NOT NULL,
        inbound INTEGER NOT NULL, outbound INTEGER NOT NULL, answered INTEGER NOT NULL, missed INTEGER NOT NULL,
        abandoned INTEGER NOT NULL, entered INTEGER NOT NULL, waited INTEGER NOT NULL, wait_ms INTEGER NOT NULL,
        PRIMARY KEY (svc_id, hour_start)) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS service_waits (svc_id INTEGER NOT NULL, hour_start INTEGER NOT NULL, wait_s INTEGER NOT NULL, calls INTEGER NOT NULL,
        PRIMARY KEY (svc_id, hour_start, wait_s)) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS open_calls (xnid TEXT PRIMARY KEY, state TEXT NOT NULL) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS timeline_boundaries (position INTEGER PRIMARY KEY, time INTEGER NOT NULL);
      CREATE INDEX IF NOT EXISTS timeline_boundaries_time ON timeline_boundaries (time);
      CREATE TABLE IF NOT EXISTS timeline_snapshots (svc_id INTEGER NOT NULL, position INTEGER NOT NULL, state TEXT NOT NULL,
        PRIMARY KEY (svc_id, position));
    `);
    const db = this.db;
    this.s = {
      getMeta: db.prepare<[string], { value: string }>('SELECT value FROM meta WHERE name = ?'),
      setMeta: db.prepare('INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value'),
      setOpen: db.prepare('INSERT OR REPLACE INTO agent_open VALUES (?, ?, ?, ?, ?, ?)'),
      setOpenCall: db.prepare('INSERT OR REPLACE INTO open_calls (xnid, state) VALUES (?, ?)'),
      delOpenCall: db.prepare('DELETE FROM open_calls WHERE xnid = ?'),
      insertBoundary: db.prepare('INSERT OR REPLACE INTO timeline_boundaries VALUES (?, ?)'),
      insertSnapshot: db.prepare('INSERT OR REPLACE INTO timeline_snapshots VALUES (?, ?, ?)'),
      countCalls: db.prepare<[number, number, number], { n: number }>('SELECT COUNT(*) n FROM call_rows WHERE svc_id = ? AND start_time >= ? AND start_time < ?'),
      // A row value: SQLite seeks the primary key to the page's start (with an OR it scanned the range
      // from its beginning for every page, quadratic in the rows exported).
      callsPage: db.prepare<[number, number, string, number, number], { start_time: number; xnid: string; row: string }>(
        `SELECT start_time, xnid, row FROM call_rows WHERE svc_id = ? AND (start_time, xnid) > (?, ?) AND start_time < ?
         ORDER BY start_time, xnid LIMIT ?`,
      ),
      agentDays: db.prepare<[number, number, number], Record<string, number>>(
        `SELECT agent_id, SUM(offered) offered, SUM(answered) answered, SUM(talk_ms) talk_ms, SUM(login_ms) login_ms,
         SUM(b1) b1, SUM(b2) b2, SUM(b3) b3, SUM(b4) b4, SUM(b5) b5, SUM(b6) b6
         FROM agent_days WHERE svc_id = ? AND day_start >= ? AND day_start < ? GROUP BY agent_id`,
      ),
      agentOpen: db.prepare<[number], Record<string, unknown>>('SELECT * FROM agent_open WHERE svc_id = ?'),
      allAgentOpen: db.prepare<[], Record<string, unknown>>('SELECT * FROM agent_open'),
      serviceHours: db.prepare<[number, number, number], Record<string, number>>(
        'SELECT * FROM service_hours WHERE svc_id = ? AND hour_start >= ? AND hour_start < ? ORDER BY hour_start',
      ),
      serviceWaits: db.prepare<[number, number, number], { hour_start: number; wait_s: number; calls: number }>(
        'SELECT hour_start, wait_s, calls FROM service_waits WHERE svc_id = ? AND hour_start >= ? AND hour_start < ?',
      ),
      openCalls: db.prepare<[], { xnid: string; state: string }>('SELECT xnid, state FROM open_calls'),
      boundaryAt: db.prepare<[number], { position: number }>('SELECT position FROM timeline_boundaries WHERE time <= ? ORDER BY time DESC, position DESC LIMIT 1'),
      lastBoundary: db.prepare<[], { position: number }>('SELECT position FROM timeline_boundaries ORDER BY position DESC LIMIT 1'),
      snapshotAt: db.prepare<[number, number], { state: string }>(
        'SELECT state FROM timeline_snapshots WHERE svc_id = ? AND position <= ? ORDER BY position DESC LIMIT 1',
      ),
      latestSnapshots: db.prepare<[], { svc_id: number; state: string }>(
        'SELECT s.svc_id, s.state FROM timeline_snapshots s JOIN (SELECT svc_id, MAX(position) p FROM timeline_snapshots GROUP BY svc_id) l ON s.svc_id = l.svc_id AND s.position = l.p',
      ),
    };
    this.batches = {
      calls: new RowBatch(db, 'INSERT OR REPLACE INTO call_rows (svc_id, start_time, xnid, row)', 4, ''),
      agentDays: new RowBatch(db, 'INSERT INTO agent_days', 13, ADD_AGENT_DAY),
      serviceHours: new RowBatch(db, 'INSERT INTO service_hours', 10, ADD_SERVICE_HOUR),
      waits: new RowBatch(db, 'INSERT INTO service_waits', 4, ADD_WAIT),
    };
    this.writeTx = db.transaction((w: AnalyticsWrite) => this.writeRows(w));
    this.readTx = db.transaction(<T>(read: () => T): T => read()) as <T>(read: () => T) => T;
  }

  /**
   * Reads made in one snapshot of the store: the projector writes it from another thread or process,
   * and a write landing between two reads (a login closed: its time moves from the open logins to the
   * day's figures) would be counted twice or not at all.
   */
  snapshot<T>(read: () => T): T {
    return this.readTx(read);
  }

  checkpoint(): number {
    return Number(this.s.getMeta.get('checkpoint')?.value ?? 0);
  }

  /** Writes one flush and the new checkpoint atomically. */
  write(w: AnalyticsWrite): void {
    this.writeTx(w);
  }

  private writeRows(w: AnalyticsWrite): void {
    const s = this.s;
    const stored = this.checkpoint();
    if (stored !== w.from) throw new CheckpointMovedError(w.from, stored);
    const b = this.batches;
    for (const batch of Object.values(b)) batch.discard();
    for (const c of w.calls) b.calls.add(c.svcId, c.startTime, c.xnid, c.row);
    b.calls.flush();
    for (const { svcId, agentId, dayStart, d } of w.agentDays.values()) {
      b.agentDays.add(svcId, agentId, dayStart, d.offered, d.answered, d.talkMs, d.loginMs, d.breakMs[1], d.breakMs[2], d.breakMs[3], d.breakMs[4], d.breakMs[5], d.breakMs[6]);
    }
    b.agentDays.flush();
    for (const { svcId, hourStart, d } of w.serviceHours.values()) {
      b.serviceHours.add(svcId, hourStart, d.inbound, d.outbound, d.answered, d.missed, d.abandoned, d.entered, d.waited, d.waitMs);
      for (const [sec, n] of d.waits) b.waits.add(svcId, hourStart, sec, n);
    }
    b.serviceHours.flush();
    b.waits.flush();
    for (const o of w.agentOpen.values()) s.setOpen.run(o.svcId, o.agentId, o.timezone, o.loginSince, o.breakCode, o.breakSince);
    for (const [xnid, state] of w.openCalls) state === null ? s.delOpenCall.run(xnid) : s.setOpenCall.run(xnid, JSON.stringify(state));
    for (const b of w.boundaries) s.insertBoundary.run(b.position, b.time);
    for (const t of w.snapshots) s.insertSnapshot.run(t.svcId, t.position, t.state);
    s.setMeta.run('checkpoint', String(w.position));
  }

  /**
   * Export rows of calls that began in [from, to), oldest first, in keyset pages: constant memory, and
   * no statement stays open on the connection between pages (the projector writes on it meanwhile).
   */
  *callRows(svcId: number, from: number, to: number, pageSize = 500): Generator<string> {
    let afterTime = from - 1;
    let afterXnid = '\uffff'; // nothing at from - 1 sorts after it
    for (;;) {
      const page = this.s.callsPage.all(svcId, afterTime, afterXnid, to, pageSize);
      for (const r of page) yield r.row;
      if (page.length < pageSize) return;
      const last = page[page.length - 1]!;
      afterTime = last.start_time;
      afterXnid = last.xnid;
    }
  }

  countCalls(svcId: number, from: number, to: number): number {
    return this.s.countCalls.get(svcId, from, to)?.n ?? 0;
  }

  agentDays(svcId: number, from: number, to: number): AgentDayRow[] {
    return this.s.agentDays.all(svcId, from, to).map((r) => ({
      agentId: r.agent_id!,
      offered: r.offered!,
      answered: r.answered!,
      talkMs: r.talk_ms!,
      loginMs: r.login_ms!,
      breakMs: [0, r.b1!, r.b2!, r.b3!, r.b4!, r.b5!, r.b6!],
    }));
  }

  agentOpen(svcId?: number): AgentOpen[] {
    const rows = svcId === undefined ? this.s.allAgentOpen.all() : this.s.agentOpen.all(svcId);
    return rows.map((r) => ({
      svcId: r.svc_id as number,
      agentId: r.agent_id as number,
      timezone: r.timezone as string,
      loginSince: r.login_since as number | null,
      breakCode: r.break_code as number | null,
      breakSince: r.break_since as number | null,
    }));
  }

  serviceHours(svcId: number, from: number, to: number): { rows: ServiceHourRow[]; waits: { hourStart: number; waitS: number; calls: number }[] } {
    // The hours and their waits as one write left them.
    const [hours, waits] = this.snapshot(() => [this.s.serviceHours.all(svcId, from, to), this.s.serviceWaits.all(svcId, from, to)] as const);
    const rows = hours.map((r) => ({
      hourStart: r.hour_start!,
      inbound: r.inbound!,
      outbound: r.outbound!,
      answered: r.answered!,
      missed: r.missed!,
      abandoned: r.abandoned!,
      entered: r.entered!,
      waited: r.waited!,
      waitMs: r.wait_ms!,
    }));
    return { rows, waits: waits.map((r) => ({ hourStart: r.hour_start, waitS: r.wait_s, calls: r.calls })) };
  }

  openCalls(): Map<string, string> {
    return new Map(this.s.openCalls.all().map((r) => [r.xnid, r.state]));
  }

  /**
   * Where to start folding a service's state as it was at `at`: the last boundary stored at or before
   * `at` (0 when none) and the service's state there (null: nothing of it yet).
   */
  timelineAt(svcId: number, at: number): { position: number; state: TimelineState | null } {
    const position = this.s.boundaryAt.get(at)?.position ?? 0;
    const snap = position > 0 ? this.s.snapshotAt.get(svcId, position) : undefined;
    return { position, state: snap ? parseState(snap.state) : null };
  }

  /** The last boundary and every service's latest snapshot: where a restarted fold resumes its timelines. */
  timelineHead(): { position: number; states: Map<number, TimelineState> } {
    return {
      position: this.s.lastBoundary.get()?.position ?? 0,
      states: new Map(this.s.latestSnapshots.all().map((r) => [r.svc_id, parseState(r.state)])),
    };
  }

  /** Throwaway storage being built (replay): no journal, no syncs; the caller makes it durable at the end. */
  bulkLoadMode(): void {
    this.db.pragma('journal_mode = OFF');
    this.db.pragma('synchronous = OFF');
    this.db.pragma('cache_size = -262144');
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
