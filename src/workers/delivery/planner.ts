/**
 * Delivery planner (process manager): follows the event log from its own checkpoint and
 * - for a `CallEnded` with a webhook record, whose service has a webhook, requests a webhook delivery;
 * - for a `QueueAlert` / `QueueAlertCleared` (CONTRACT section 17), the same with the alert's JSON;
 * - for a leg event, requests one delivery per matching `http`/`webhook` subscriber of the service;
 * - hands each delivery it requested to the sender for its first attempt at once, in memory, or (the
 *   sender full) enqueues the job that makes the attempts;
 * - for `DeliveryRequested` read back from the log, keeps its checkpoint there until that first
 *   attempt is recorded (a crash meanwhile reads it again, and enqueues its job), and enqueues the job
 *   of one it did not request itself (another process, an earlier run);
 * - for `DeliveryRedeliveryRequested`, enqueues the job of the new round.
 * Delivery ids and their `DeliveryRequested` event ids derive from the causing event and job ids from
 * the delivery, so replaying any part of the log (a crash before the checkpoint moved) doubles nothing.
 * Who gets a delivery is decided on the read models as they are when the event is handled (they
 * include at least everything up to the event): a replayed event sees the current webhook URL and
 * subscribers, which matters only if they changed between the event and its replay.
 */
import type { Context } from '../../context.js';
import { follow, type Follower, type Hold } from '../follower.js';
import { LEG_EVENT_TYPES, maskSelects, toSocketEvent, type LegEventType } from '../../domain/call-events.js';
import type { Recorded } from '../../commands/platform-events.js';
import { streams } from '../../domain/streams.js';
import { attemptDecider, deliveryIds, deliveryInitialState, evolveDelivery, type DeliveryRequestedData } from '../../commands/delivery/delivery.js';
import { aggregateCache } from '../../commands/aggregate-cache.js';
import type { ServiceDoc } from '../../projections/services.js';
import type { SubscriberDoc as SubscriberRecord } from '../../projections/subscribers.js';
import type { AppendResult, StreamAppend } from '../../gateways/event-store/port.js';
import { DELIVERY_QUEUE, serviceDoc, type DeliveryJob, type DeliverySender } from './sender.js';
import { peekable } from '../../gateways/read-store/port.js';
import { orderedIdsFrom } from './id-order.js';

export const PLANNER_CHECKPOINT = 'delivery-planner';
/** Events the planner handles at once (first attempts it started do not count: they are held, not handled). */
export const PLANNER_CONCURRENCY = 512;

/**
 * The fields of a subscriber document (read model `subscribers`, one per svc and agent) deliveries
 * read; the id and the mask read tolerantly (a string id, a mask as digits or absent).
 */
export interface SubscriberDoc
  extends Pick<SubscriberRecord, 'url' | 'is_registered' | 'agent_id' | 'svc_id' | 'auth_key' | 'channel_type'>,
    Record<string, unknown> {
  id: string | number;
  event_mask: number | string | null;
}

export const DELIVERING_CHANNELS = ['http', 'webhook'];

/** Does this subscriber get this leg event (CONTRACT section 7)? */
export function subscriberWants(sub: SubscriberDoc, type: LegEventType, agentId: number | null): boolean {
  if (sub.is_registered !== true) return false;
  if (!DELIVERING_CHANNELS.includes(String(sub.channel_type))) return false;
  if (typeof sub.url !== 'string' || sub.url === '') return false;
  const mask = sub.event_mask === null || sub.event_mask === undefined ? '111111' : String(sub.event_mask);
  if (!maskSelects(mask, type)) return false;
  const subAgent = Number(sub.agent_id ?? 0);
  return subAgent === 0 || subAgent === agentId;
}

/** What the planner reacts to. */
const PLANNED_TYPES = ['CallEnded', 'QueueAlert', 'QueueAlertCleared', ...LEG_EVENT_TYPES, 'DeliveryRequested', 'DeliveryRedeliveryRequested'] as const;
type Planned = Recorded<(typeof PLANNED_TYPES)[number]>;

/** Deliveries this planner requested and has not read back yet, remembered at most (a bounded map). */
const TAKEN_MAX = 50_000;

/**
 * The appends that request deliveries: each starts its delivery's stream (`no_stream`) with an
 * event of a deterministic id, so a replayed cause stores nothing twice. Not `any`: KurrentDB
 * keeps ids appended with `any` only in a cache of recent ones, emptied by a restart, after which
 * the same event would be stored again; with an expected revision it compares the stream's own
 * events at that revision, which a restart does not forget.
 */
export function requestAppends(requests: DeliveryRequestedData[]): StreamAppend[] {
  return requests.map((data) => ({
    streamId: streams.delivery(data.deliveryId),
    events: [{ type: 'DeliveryRequested', data, id: deliveryIds.requestedEvent(data.deliveryId) }],
    expectedRevision: 'no_stream',
  }));
}

export class DeliveryPlanner {
  private follower: Follower | null = null;
  /**
   * Deliveries this planner requested, until their DeliveryRequested is read back from the log: the
   * end of their first attempt (recorded, or a job after all), or of their job's enqueue. The read
   * back holds the checkpoint until then, and enqueues nothing. One forgotten (bound, restart) is
   * enqueued: its job waits for a first attempt still running here, then finds the round moved on.
   */
  private readonly taken = new Map<string, Promise<void>>();
  private readonly peek;
  /** Events from this position on get time-ordered delivery ids (id-order.ts). */
  private orderedFrom = Number.POSITIVE_INFINITY;
  /**
   * Events from this position on were stored after this planner started: no earlier run can have
   * requested their deliveries. Only theirs get a first attempt in memory; an older event's delivery
   * (a replay after a crash) may have been attempted already, which its job finds in the stream.
   */
  private freshFrom = Number.POSITIVE_INFINITY;

  constructor(
    private readonly ctx: Context,
    private readonly sender: DeliverySender,
  ) {
    this.peek = peekable(ctx.reads);
  }

  /** Position of the last event handled. */
  get position(): number {
    return this.follower?.position ?? 0;
  }

  async start(): Promise<void> {
    this.orderedFrom = await orderedIdsFrom(this.ctx.events);
    this.freshFrom = (await this.ctx.events.headPosition()) + 1;
    // Deliveries are independent: events read together are planned together, so their
    // DeliveryRequested appends share a commit and their jobs' enqueues share a sync.
    this.follower = await follow(
      this.ctx,
      PLANNER_CHECKPOINT,
      PLANNED_TYPES,
      async (e, hold) => {
        await this.handle(e, hold);
      },
      { concurrency: PLANNER_CONCURRENCY },
    );
  }

  async stop(): Promise<void> {
    // The follower first takes note that it stops: a first attempt given up then is not handled again here.
    const stopped = this.follower?.stop();
    this.sender.stop();
    await stopped;
  }

  private async handle(event: Planned, hold: Hold): Promise<boolean> {
    if (event.type === 'CallEnded') return this.planWebhook(event);
    if (event.type === 'QueueAlert' || event.type === 'QueueAlertCleared') return this.planAlert(event);
    if (event.type === 'DeliveryRequested') {
      const id = event.data.deliveryId;
      const taken = this.taken.get(id);
      this.taken.delete(id);
      // Should the first attempt fail to be recorded, this event is handled again: then as one not taken.
      if (taken) hold(taken);
      else await this.enqueue(id, 0);
      return true;
    }
    if (event.type === 'DeliveryRedeliveryRequested') {
      await this.enqueue(event.data.deliveryId, event.data.round);
      return true;
    }
    return this.planSubscribers(event);
  }

  private async enqueue(deliveryId: string, round: number) {
    const job: DeliveryJob = { deliveryId, round };
    await this.ctx.queue.enqueue(DELIVERY_QUEUE, { id: deliveryIds.job(deliveryId, round), payload: job, backoffMs: this.ctx.config.webhookRetryMs });
  }

  private async planWebhook(event: Recorded<'CallEnded'>): Promise<boolean> {
    const call = event.data;
    if (!call.webhook) return false;
    // The read models must include everything stored up to this event (a webhook set just before the call).
    await this.ctx.sync.waitFor(event.position);
    const found = serviceDoc(this.ctx, this.peek, call.svcId);
    const service = found instanceof Promise ? await found : found;
    if (!service?.webhook?.url) return false;
    const deliveryId = deliveryIds.webhook(event.id, event.position >= this.orderedFrom);
    await this.request(event.position >= this.freshFrom, {
      deliveryId,
      kind: 'webhook',
      svcId: call.svcId,
      url: service.webhook.url,
      callid: call.webhook.callid,
      webhookId: call.webhook.callid,
      body: JSON.stringify(call.webhook),
      at: event.time,
    });
    return true;
  }

  /** An alert goes to the service's webhook, signed and retried like a webhook record, with a `webhook-id` of its own (the delivery's). */
  private async planAlert(event: Recorded<'QueueAlert' | 'QueueAlertCleared'>): Promise<boolean> {
    const alert = event.data;
    await this.ctx.sync.waitFor(event.position);
    const found = serviceDoc(this.ctx, this.peek, alert.svcId);
    const service = found instanceof Promise ? await found : found;
    if (!service?.webhook?.url) return false;
    const deliveryId = deliveryIds.webhook(event.id, event.position >= this.orderedFrom);
    const { svcId, queueId, reason, value, threshold, time } = alert;
    await this.request(event.position >= this.freshFrom, {
      deliveryId,
      kind: 'webhook',
      svcId,
      url: service.webhook.url,
      webhookId: deliveryId,
      body: JSON.stringify({ type: event.type, svcId, queueId, reason, value, threshold, time }),
      at: event.time,
    });
    return true;
  }

  private async planSubscribers(event: Recorded<LegEventType>): Promise<boolean> {
    const leg = event.data;
    await this.ctx.sync.waitFor(event.position);
    const subs = await this.ctx.reads.find<SubscriberDoc>('subscribers', { svc_id: leg.svcId });
    const wanted = subs.filter((s) => subscriberWants(s, event.type, leg.agentId));
    if (wanted.length === 0) return false;
    const body = JSON.stringify(toSocketEvent(event));
    // Every subscriber's delivery in one append (one commit), however many want the event.
    await this.request(
      event.position >= this.freshFrom,
      ...wanted.map((s): DeliveryRequestedData => {
        const subscriber = { svcId: leg.svcId, agentId: Number(s.agent_id ?? 0), id: String(s.id) };
        const deliveryId = deliveryIds.subscriber(event.id, subscriber, event.position >= this.orderedFrom);
        return { deliveryId, kind: 'subscriber', svcId: leg.svcId, url: s.url, eventId: event.id, subscriber, webhookId: deliveryId, body, at: event.time };
      }),
    );
    return true;
  }

  /** Requests the deliveries (one append), then makes their first attempts (`fresh`: a cause no earlier run saw) or enqueues their jobs. */
  private async request(fresh: boolean, ...requests: DeliveryRequestedData[]) {
    // Taken before the append: the requests may be read back from the log before it answers.
    const ends = requests.map((r) => {
      let end!: (p: Promise<void>) => void;
      const taken = new Promise<void>((resolve) => (end = resolve));
      // Its failure is for the read back to handle (hold), not an unhandled rejection meanwhile.
      taken.catch(() => undefined);
      this.taken.set(r.deliveryId, taken);
      return end;
    });
    // The oldest go first (a Map keeps insertion order); no copy of the map: it is full under a backlog.
    for (const id of this.taken.keys()) {
      if (this.taken.size <= TAKEN_MAX) break;
      this.taken.delete(id);
    }
    let results: AppendResult[];
    try {
      results = await this.ctx.events.appendToStreams(requestAppends(requests));
    } catch (err) {
      for (const r of requests) this.taken.delete(r.deliveryId);
      throw err;
    }
    const cache = aggregateCache(this.ctx.events);
    const enqueued: Promise<void>[] = [];
    results.forEach((r, i) => {
      const req = requests[i]!;
      // A stream this append started is at its first attempt. A replayed request's is for its job to
      // judge from the stream (an idempotent append may answer the revision it had then).
      if (fresh && r.nextExpectedRevision === 0 && this.sender.takesFirst(req.url)) {
        const state = evolveDelivery(deliveryInitialState(), { type: 'DeliveryRequested', data: req });
        // The attempt records on this state without reading the stream back.
        cache.remember(streams.delivery(req.deliveryId), attemptDecider, { state, revision: 0, position: r.position });
        ends[i]!(this.sender.first(state));
        return;
      }
      const job = this.enqueue(req.deliveryId, 0);
      ends[i]!(job);
      enqueued.push(job);
    });
    // Jobs are durable before the causing event is passed (first attempts hold their DeliveryRequested).
    await Promise.all(enqueued);
  }
}
