/**
 * Folds the log into the analytics read models (CONTRACT section 12): export rows of ended calls,
 * agent figures per local day, service figures per local hour, and the per-service timeline with
 * its snapshots. The fold keeps the little it must remember between events in memory (open calls,
 * open logins and breaks, each service's current timeline state) and hands every change to the
 * store as additive rows, written with the checkpoint in one transaction.
 */
import type { RecordedEvent } from '../gateways/event-store/port.js';
import { LEG_EVENT_TYPES, type CallEndedData } from '../domain/call-events.js';
import type { ServiceProvisionedData } from '../domain/events.js';
import { eventTypes, type Recorded } from '../commands/platform-events.js';
import {
  emptyWrite,
  type AgentDayDelta,
  type AgentOpen,
  type AnalyticsStore,
  type AnalyticsWrite,
  type ServiceHourDelta,
} from './store.js';
import type { EventStore } from '../gateways/event-store/port.js';
import { RecentIntervals } from './intervals.js';
import { applyTimeline, serialiseState, TIMELINE_DATA_TYPES, timelineServices, type KnownDoc, type TimelineState } from './timeline.js';

/**
 * Every this many events of the log, a boundary: each service changed since the last one gets a
 * snapshot of its dashboard state there. An `at` query starts from the last boundary before `at` and
 * reads at most this many events of the log after it.
 */
export const SNAPSHOT_EVERY = 1000;

/** The column order of an export row (CONTRACT section 12): the webhook record's fields, then ours. */
export const EXPORT_COLUMNS = [
  'callid',
  'call-duration',
  'agent-number',
  'customer-number',
  'end-time',
  'start-time',
  'recording-url',
  'call-type',
  'virtual-number',
  'disposition',
  'svc-id',
  'agent-id',
  'ivr-data',
] as const;

/** What a running call needs remembered until it ends. */
interface OpenCall {
  svcId: number;
  timezone: string;
  direction: 'Inbound' | 'Outbound';
  blocked: boolean;
  ivr: string;
  /** When the caller entered the queue (the IVR answered: CustomerUp); inbound only. */
  queuedAt: number | null;
  /** First AgentUp: when the caller stopped waiting, and who talked first. */
  firstUpAt: number | null;
  firstAgentId: number | null;
  /** The caller hung up while waiting in the queue. */
  abandoned: boolean;
  /** Agent legs up now: legId → [agentId, up time]. */
  up: Record<string, [number, number]>;
}

const newAgentDay = (): AgentDayDelta => ({ offered: 0, answered: 0, talkMs: 0, loginMs: 0, breakMs: [0, 0, 0, 0, 0, 0, 0] });
const newServiceHour = (): ServiceHourDelta => ({
  inbound: 0,
  outbound: 0,
  answered: 0,
  missed: 0,
  abandoned: 0,
  entered: 0,
  waited: 0,
  waitMs: 0,
  waits: new Map(),
});

const LOGIN_EVENTS = eventTypes('AgentLoggedIn', 'AgentLoggedOut', 'AgentBreakStarted', 'AgentBreakEnded');
/** The call events the figures count (not CustomerRing: nothing counted changes when the customer is rung). */
const CALL_EVENTS = eventTypes('CallStarted', ...LEG_EVENT_TYPES.filter((t) => t !== 'CustomerRing'), 'CallEnded');

/** The events the figures read (the services' timezones are the timeline's). */
const FIGURE_EVENTS = [...LOGIN_EVENTS.list, ...CALL_EVENTS.list];

/**
 * What the model reads of the log: every event (null: the timeline counts them all), and the data of
 * these types only (the rest need not be decoded for it).
 */
export function analyticsReads(): { only: null; data: string[] } {
  return { only: null, data: [...new Set<string>([...FIGURE_EVENTS, ...TIMELINE_DATA_TYPES])] };
}

export class AnalyticsModel {
  private readonly calls = new Map<string, OpenCall>();
  private readonly agents = new Map<string, AgentOpen>();
  private readonly timelines = new Map<number, TimelineState>();
  /** Services whose timeline changed since the last boundary, and the events since it. */
  private readonly changed = new Set<number>();
  private sinceBoundary = 0;
  /** Open calls the store holds a row of: a call that starts and ends between two writes is never stored. */
  private readonly storedOpen = new Set<string>();
  private pending: AnalyticsWrite;
  private pendingEvents = 0;
  private readonly intervals = new RecentIntervals();
  private known: KnownDoc | undefined;

  constructor(private readonly store: AnalyticsStore) {
    this.pending = emptyWrite(store.checkpoint());
  }

  /**
   * Replay, folding from the log's start beside a document fold that applies each event first: the
   * timeline takes the agents' documents from it instead of evolving them again.
   */
  besideFold(known: KnownDoc): void {
    this.known = known;
  }

  get position(): number {
    return this.pending.position;
  }

  /** Events applied but not yet written. */
  get unwritten(): number {
    return this.pendingEvents;
  }

  /**
   * Loads what the fold remembers from the store (a restart resumes where the checkpoint is): open
   * calls and logins, and each service's timeline from its latest snapshot plus the log's events
   * from the last boundary to the checkpoint.
   */
  async load(events: EventStore): Promise<void> {
    for (const [xnid, state] of this.store.openCalls()) {
      this.calls.set(xnid, JSON.parse(state) as OpenCall);
      this.storedOpen.add(xnid);
    }
    for (const o of this.store.agentOpen()) this.agents.set(`${o.svcId}-${o.agentId}`, o);
    const head = this.store.timelineHead();
    for (const [svcId, state] of head.states) this.timelines.set(svcId, state);
    const checkpoint = this.pending.position;
    let after = head.position;
    while (after < checkpoint) {
      const page = await events.readAll({ after, maxCount: Math.min(1000, checkpoint - after) });
      if (page.length === 0) break;
      for (const e of page) {
        if (e.position > checkpoint) break;
        this.sinceBoundary++;
        for (const svcId of timelineServices(e)) this.timelineOf(svcId, e);
      }
      after = page[page.length - 1]!.position;
    }
  }

  private timelineOf(svcId: number, e: RecordedEvent) {
    let state = this.timelines.get(svcId);
    if (!state) this.timelines.set(svcId, (state = new Map()));
    applyTimeline(state, svcId, e, this.known);
    this.changed.add(svcId);
  }

  private timezoneOf(svcId: number): string {
    const svc = this.timelines.get(svcId)?.get(`services\u0000${svcId}`) as ServiceProvisionedData | undefined;
    return svc?.timezone ?? 'UTC';
  }

  private agentDay(svcId: number, agentId: number, dayStart: number): AgentDayDelta {
    const key = `${svcId}|${agentId}|${dayStart}`;
    let row = this.pending.agentDays.get(key);
    if (!row) this.pending.agentDays.set(key, (row = { svcId, agentId, dayStart, d: newAgentDay() }));
    return row.d;
  }

  private serviceHour(svcId: number, hourStart: number): ServiceHourDelta {
    const key = `${svcId}|${hourStart}`;
    let row = this.pending.serviceHours.get(key);
    if (!row) this.pending.serviceHours.set(key, (row = { svcId, hourStart, d: newServiceHour() }));
    return row.d;
  }

  apply(e: RecordedEvent): void {
    if (e.position <= this.pending.position) return;
    this.pending.position = e.position;
    this.pendingEvents++;
    for (const svcId of timelineServices(e)) this.timelineOf(svcId, e);
    if (++this.sinceBoundary >= SNAPSHOT_EVERY) this.boundary(e);
    if (LOGIN_EVENTS.has(e)) this.applyLogin(e);
    else if (e.streamId.startsWith('call-') && CALL_EVENTS.has(e)) this.applyCall(e);
  }

  private boundary(e: RecordedEvent) {
    this.pending.boundaries.push({ position: e.position, time: e.time });
    for (const svcId of this.changed) this.pending.snapshots.push({ svcId, position: e.position, state: serialiseState(this.timelines.get(svcId)!) });
    this.changed.clear();
    this.sinceBoundary = 0;
  }

  /** Login and break spans, split at local midnights, counted on the days they overlap. */
  private applyLogin(e: Recorded<(typeof LOGIN_EVENTS.list)[number]>) {
    const d = e.data;
    const key = `${d.svcId}-${d.agentId}`;
    const tz = this.timezoneOf(d.svcId);
    const o = this.agents.get(key) ?? { svcId: d.svcId, agentId: d.agentId, timezone: tz, loginSince: null, breakCode: null, breakSince: null };
    o.timezone = tz;
    const t = d.time;
    const closeBreak = () => {
      if (o.breakCode !== null && o.breakSince !== null) {
        const code = o.breakCode;
        this.intervals.splitSpan(o.breakSince, t, 'day', tz, (day, ms) => (this.agentDay(d.svcId, d.agentId, day).breakMs[code]! += ms));
      }
      o.breakCode = null;
      o.breakSince = null;
    };
    const closeLogin = () => {
      if (o.loginSince !== null) this.intervals.splitSpan(o.loginSince, t, 'day', tz, (day, ms) => (this.agentDay(d.svcId, d.agentId, day).loginMs += ms));
      o.loginSince = null;
    };
    switch (e.type) {
      case 'AgentLoggedOut':
        closeBreak();
        closeLogin();
        break;
      case 'AgentLoggedIn':
      case 'AgentBreakEnded':
        closeBreak();
        o.loginSince ??= t;
        break;
      case 'AgentBreakStarted':
        closeBreak();
        o.loginSince ??= t;
        if (e.data.code !== undefined && e.data.code >= 1 && e.data.code <= 6) {
          o.breakCode = e.data.code;
          o.breakSince = t;
        }
        break;
    }
    this.agents.set(key, o);
    this.pending.agentOpen.set(key, { ...o });
  }

  private applyCall(e: Recorded<(typeof CALL_EVENTS.list)[number]>) {
    const xnid = e.data.xnid;
    if (!xnid) return;
    if (e.type === 'CallStarted') {
      const s = e.data;
      const c: OpenCall = {
        svcId: s.svcId,
        timezone: s.timezone,
        direction: s.direction,
        blocked: s.blocked,
        ivr: s.data,
        queuedAt: null,
        firstUpAt: null,
        firstAgentId: null,
        abandoned: false,
        up: {},
      };
      this.calls.set(xnid, c);
      this.pending.openCalls.set(xnid, c);
      return;
    }
    const c = this.calls.get(xnid);
    if (!c) return;
    if (e.type === 'CallEnded') return this.endCall(xnid, c, e.data);
    const leg = e.data;
    switch (e.type) {
      case 'CustomerUp':
        if (c.direction === 'Inbound' && !c.blocked && c.queuedAt === null) c.queuedAt = leg.time;
        break;
      case 'CustomerHangup':
        if (c.queuedAt !== null && c.firstUpAt === null) c.abandoned = true;
        break;
      case 'AgentRing':
        if (leg.agentId !== null) this.agentDay(c.svcId, leg.agentId, this.intervals.startOf(leg.time, 'day', c.timezone)).offered += 1;
        break;
      case 'AgentUp':
        if (leg.agentId === null) break;
        this.agentDay(c.svcId, leg.agentId, this.intervals.startOf(leg.time, 'day', c.timezone)).answered += 1;
        c.up[leg.legId] = [leg.agentId, leg.time];
        if (c.firstUpAt === null) {
          c.firstUpAt = leg.time;
          c.firstAgentId = leg.agentId;
        }
        break;
      case 'AgentHangup': {
        const up = c.up[leg.legId];
        if (up) {
          // Talk time counts on the day the agent answered.
          this.agentDay(c.svcId, up[0], this.intervals.startOf(up[1], 'day', c.timezone)).talkMs += Math.max(0, leg.time - up[1]);
          delete c.up[leg.legId];
        }
        break;
      }
      default:
        return;
    }
    this.pending.openCalls.set(xnid, c);
  }

  private endCall(xnid: string, c: OpenCall, d: CallEndedData) {
    this.calls.delete(xnid);
    if (this.storedOpen.has(xnid)) this.pending.openCalls.set(xnid, null);
    else this.pending.openCalls.delete(xnid);
    // A blocked caller's call is spam: no record, not in the service's figures (CONTRACT section 11).
    if (c.blocked || !d.webhook) return;
    const w = d.webhook;
    const row: Record<string, unknown> = {
      callid: w.callid,
      'call-duration': w['call-duration'],
      'agent-number': w['agent-number'],
      'customer-number': w['customer-number'],
      'end-time': w['end-time'],
      'start-time': w['start-time'],
      'recording-url': w['recording-url'] ?? null,
      'call-type': w['call-type'],
      'virtual-number': w['virtual-number'],
      disposition: w.disposition,
      'svc-id': c.svcId,
      'agent-id': c.firstAgentId,
      'ivr-data': c.ivr,
    };
    this.pending.calls.push({ svcId: c.svcId, startTime: d.startTime, xnid, row: JSON.stringify(row) });
    const h = this.serviceHour(c.svcId, this.intervals.startOf(d.startTime, 'hour', c.timezone));
    if (c.direction === 'Inbound') h.inbound += 1;
    else h.outbound += 1;
    if (d.disposition === 'answered') h.answered += 1;
    else h.missed += 1;
    if (c.queuedAt !== null) {
      h.entered += 1;
      if (c.abandoned) h.abandoned += 1;
      if (c.firstUpAt !== null) {
        const wait = Math.max(0, c.firstUpAt - c.queuedAt);
        h.waited += 1;
        h.waitMs += wait;
        const sec = Math.ceil(wait / 1000);
        h.waits.set(sec, (h.waits.get(sec) ?? 0) + 1);
      }
    }
  }

  /** Writes everything applied so far with the checkpoint, atomically. */
  flush(): void {
    // Kept until written: a refused transaction wrote nothing, and a retry writes all of it.
    this.store.write(this.pending);
    for (const [xnid, state] of this.pending.openCalls) {
      if (state === null) this.storedOpen.delete(xnid);
      else this.storedOpen.add(xnid);
    }
    this.pending = emptyWrite(this.pending.position);
    this.pendingEvents = 0;
  }
}
