/**
 * Scheduled calls: `CallScheduled` becomes a job due at its time; the job places the attempt and the
 * call in one transaction (so an attempt is placed once, however often the job runs); a missed attempt
 * is tried again SCHEDULE_RETRY_S after it ended, up to max-tries. The schedule lives in the event log
 * and the queue, so a restart or a kill -9 loses none and places none twice. An attempt due outside
 * the service's calling hours waits for the next opening (CONTRACT section 15).
 */
import type { Context } from '../../context.js';
import { handleCommand, handleStreams, loadAggregate } from '../../commands/decider.js';
import { scheduleDecider, type ScheduleState } from '../../commands/schedule/schedule.js';
import { isEvent } from '../../commands/platform-events.js';
import { streams } from '../../domain/streams.js';
import { newCallId, outboundCallStarted } from '../../commands/call/place.js';
import { callDecider, type CallState } from '../../commands/call/call.js';
import { aggregateCache } from '../../commands/aggregate-cache.js';
import { follow, type Follower } from '../follower.js';
import { callableFrom, doNotCall } from '../../queries/compliance.js';
import type { ServiceDoc } from '../../projections/services.js';

export const SCHEDULE_QUEUE = 'scheduled-call';

const jobId = (id: string, attempt: number) => `${id}:${attempt}`;
/** The job of an attempt moved to the calling hours' opening: its id names the opening, so moving it twice is one job. */
export const heldJobId = (id: string, attempt: number, opening: number) => `${jobId(id, attempt)}@${opening}`;
const BACKOFF_MS = [1000, 5000, 30000];

/**
 * CONTRACT section 15, asked before an attempt is placed: a number that became dnd or blocked since it
 * was scheduled ends the schedule without a call; outside the service's calling hours the attempt
 * moves to a job due at the next opening. True when the attempt must not be placed now.
 */
async function heldBack(ctx: Context, id: string, attempt: number): Promise<boolean> {
  const { state } = await loadAggregate(ctx.events, streams.schedule(id), scheduleDecider);
  const s = state.scheduled;
  if (!s || state.done || state.attempts >= attempt) return false;
  const service = await ctx.reads.get<ServiceDoc>('services', String(s.svcId));
  const reason = await doNotCall(ctx, s.svcId, s.number, service);
  if (reason) {
    await handleCommand(ctx.events, streams.schedule(id), scheduleDecider, { type: 'Skip', reason, time: ctx.now() });
    return true;
  }
  const now = ctx.now();
  const opening = callableFrom(service, now);
  if (opening <= now) return false;
  await ctx.queue.enqueue(SCHEDULE_QUEUE, { id: heldJobId(id, attempt, opening), payload: { id, attempt }, runAt: opening, backoffMs: BACKOFF_MS });
  return true;
}

/**
 * Places attempt `attempt` with its call, or nothing when it is placed already (or the schedule is
 * over). Conflicts that persist throw (503), so the queue runs the job again: a job never completes
 * without its call placed.
 */
async function placeAttempt(ctx: Context, id: string, attempt: number) {
  const scheduleStream = streams.schedule(id);
  await handleStreams(ctx.events, [{ streamId: scheduleStream, decider: scheduleDecider }], async ([schedule]) => {
    const state = schedule!.state as ScheduleState;
    const s = state.scheduled;
    if (!s || state.done || state.attempts >= attempt) return { appends: [], value: null };
    const started = await outboundCallStarted(ctx, {
      svcId: s.svcId,
      number: s.number,
      origin: 'schedule',
      namedAgentId: s.namedAgentId,
      agentFirst: false,
      recording: true,
      countryCode: s.countryCode,
      skillId: s.skillId,
      userId: s.userId,
      source: { kind: 'schedule', id, attempt },
      xnid: newCallId(),
    });
    const events = scheduleDecider.decide({ type: 'PlaceAttempt', attempt, xnid: started.xnid, time: ctx.now() }, state);
    if (events.length === 0) return { appends: [], value: null };
    return {
      appends: [
        { streamId: scheduleStream, events },
        { streamId: streams.call(started.xnid), events: [{ type: 'CallStarted', data: started }], expectedRevision: 'no_stream' },
      ],
      value: null,
    };
  });
}

/** A call's CallStarted data, for call ends stored before they said how the call started. */
async function startedOf(ctx: Context, xnid: string) {
  // How the call started never changes: the call flow's cached state says it without a read.
  const cached = aggregateCache(ctx.events).peek<CallState>(streams.call(xnid), callDecider)?.state.started;
  if (cached) return cached;
  const first = (await ctx.events.readStream(streams.call(xnid), { maxCount: 1 }))[0];
  return first && isEvent(first, 'CallStarted') ? first.data : undefined;
}

export async function startScheduledCalls(ctx: Context): Promise<Follower> {
  ctx.queue.process<{ id: string; attempt: number }>(
    SCHEDULE_QUEUE,
    async (job) => {
      if (await heldBack(ctx, job.payload.id, job.payload.attempt)) return;
      await placeAttempt(ctx, job.payload.id, job.payload.attempt);
    },
    { concurrency: 8 },
  );
  return follow(ctx, 'scheduled-calls', ['CallScheduled', 'CallEnded'], async (e) => {
    if (e.type === 'CallScheduled') {
      const d = e.data;
      await ctx.queue.enqueue(SCHEDULE_QUEUE, { id: jobId(d.id, 1), payload: { id: d.id, attempt: 1 }, runAt: d.runAt, backoffMs: BACKOFF_MS });
      return;
    }
    const ended = e.data;
    const source = (ended.source !== undefined ? ended.source : (await startedOf(ctx, ended.xnid))?.source) as { kind?: string; id?: string; attempt?: number } | null | undefined;
    if (source?.kind !== 'schedule' || !source.id || !source.attempt) return;
    const answered = ended.disposition === 'answered';
    const r = await handleCommand(ctx.events, streams.schedule(source.id), scheduleDecider, { type: 'RecordOutcome', attempt: source.attempt, xnid: ended.xnid, answered, time: ctx.now() });
    if (answered || r.state.done || !r.state.scheduled || source.attempt >= r.state.scheduled.maxTries) return;
    const next = source.attempt + 1;
    await ctx.queue.enqueue(SCHEDULE_QUEUE, { id: jobId(source.id, next), payload: { id: source.id, attempt: next }, runAt: ended.endTime + ctx.config.scheduleRetryS * 1000, backoffMs: BACKOFF_MS });
  });
}
