/**
 * Delivery planner (process manager): follows the event log from its own checkpoint and
 * - for a `CallEnded` with a webhook record, whose service has a webhook, requests a webhook delivery;
 * - for a leg event, requests one delivery per matching `http`/`webhook` subscriber of the service;
 * - for `DeliveryRequested` / `DeliveryRedeliveryRequested`, enqueues the job that makes the attempts.
 * Delivery ids and their `DeliveryRequested` event ids derive from the causing event and job ids from
 * the delivery, so replaying any part of the log (a crash before the checkpoint moved) doubles nothing.
 * Who gets a delivery is decided on the read models as they are when the event is handled (they
 * include at least everything up to the event): a replayed event sees the current webhook URL and
 * subscribers, which matters only if they changed between the event and its replay.
 */
import type { Context } from '../../context.js';
import { follow, type Follower } from '../follower.js';
import { LEG_EVENT_TYPES, maskSelects, toSocketEvent, type LegEventType } from '../../domain/call-events.js';
import type { Recorded } from '../../domain/platform-events.js';
import { streams } from '../../domain/streams.js';
import { attemptDecider, deliveryIds, deliveryInitialState, evolveDelivery, type DeliveryRequestedData } from '../../commands/delivery/delivery.js';
import { aggregateCache } from '../../commands/aggregate-cache.js';
import type { ServiceDoc } from '../../projections/services.js';
import type { SubscriberDoc as SubscriberRecord } from '../../projections/subscribers.js';
import { DELIVERY_QUEUE, serviceDoc, type DeliveryJob } from './sender.js';
import { peekable } from '../../gateways/read-store/port.js';
import { orderedIdsFrom } from './id-order.js';

export const PLANNER_CHECKPOINT = 'delivery-planner';
/** Events the planner handles at once. */
export const PLANNER_CONCURRENCY = 128;

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
const PLANNED_TYPES = ['CallEnded', ...LEG_EVENT_TYPES, 'DeliveryRequested', 'DeliveryRedeliveryRequested'] as const;
type Planned = Recorded<(typeof PLANNED_TYPES)[number]>;

/** Deliveries whose first job this planner enqueued itself, remembered at most (a bounded set). */
const ENQUEUED_MAX = 10_000;

export class DeliveryPlanner {
  private follower: Follower | null = null;
  /**
   * Deliveries whose round-0 job was enqueued right after their DeliveryRequested append: their
   * DeliveryRequested, read back from the log, enqueues nothing again. One forgotten (bound, restart)
   * is enqueued again, which the job id makes harmless.
   */
  private readonly enqueued = new Set<string>();
  private readonly peek;
  /** Events from this position on get time-ordered delivery ids (id-order.ts). */
  private orderedFrom = Number.POSITIVE_INFINITY;

  constructor(private readonly ctx: Context) {
    this.peek = peekable(ctx.reads);
  }

  /** Position of the last event handled. */
  get position(): number {
    return this.follower?.position ?? 0;
  }

  async start(): Promise<void> {
    this.orderedFrom = await orderedIdsFrom(this.ctx.events);
    // Deliveries are independent: events read together are planned together, so their
    // DeliveryRequested appends share a commit and their jobs' enqueues share a sync.
    this.follower = await follow(
      this.ctx,
      PLANNER_CHECKPOINT,
      PLANNED_TYPES,
      async (e) => {
        await this.handle(e);
      },
      { concurrency: PLANNER_CONCURRENCY },
    );
  }

  async stop(): Promise<void> {
    await this.follower?.stop();
  }

  private async handle(event: Planned): Promise<boolean> {
    if (event.type === 'CallEnded') return this.planWebhook(event);
    if (event.type === 'DeliveryRequested') {
      if (!this.enqueued.delete(event.data.deliveryId)) await this.enqueue(event.data.deliveryId, 0);
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
    await this.request({
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

  private async planSubscribers(event: Recorded<LegEventType>): Promise<boolean> {
    const leg = event.data;
    await this.ctx.sync.waitFor(event.position);
    const subs = await this.ctx.reads.find<SubscriberDoc>('subscribers', { svc_id: leg.svcId });
    const wanted = subs.filter((s) => subscriberWants(s, event.type, leg.agentId));
    if (wanted.length === 0) return false;
    const body = JSON.stringify(toSocketEvent(event));
    // Every subscriber's delivery in one append (one commit), however many want the event.
    await this.request(
      ...wanted.map((s): DeliveryRequestedData => {
        const subscriber = { svcId: leg.svcId, agentId: Number(s.agent_id ?? 0), id: String(s.id) };
        const deliveryId = deliveryIds.subscriber(event.id, subscriber, event.position >= this.orderedFrom);
        return { deliveryId, kind: 'subscriber', svcId: leg.svcId, url: s.url, eventId: event.id, subscriber, webhookId: deliveryId, body, at: event.time };
      }),
    );
    return true;
  }

  private async request(...requests: DeliveryRequestedData[]) {
    // 'any' with the deterministic event id: a replayed event stores nothing twice.
    const results = await this.ctx.events.appendToStreams(
      requests.map((data) => ({
        streamId: streams.delivery(data.deliveryId),
        events: [{ type: 'DeliveryRequested', data, id: deliveryIds.requestedEvent(data.deliveryId) }],
        expectedRevision: 'any' as const,
      })),
    );
    // The sender's first attempt starts from this state without reading the stream back. Only a
    // stream this append started (revision 0): a replayed request leaves what is cached alone.
    const cache = aggregateCache(this.ctx.events);
    results.forEach((r, i) => {
      if (r.nextExpectedRevision !== 0) return;
      const state = evolveDelivery(deliveryInitialState(), { type: 'DeliveryRequested', data: requests[i]! });
      cache.remember(streams.delivery(requests[i]!.deliveryId), attemptDecider, { state, revision: 0, position: r.position });
    });
    // The jobs at once, not after the requests come back through the log: a delivery sooner, and
    // one enqueue (a write and a sync of the job queue) instead of two. Their ids are remembered
    // before the enqueue, as the requests may be read back from the log while it runs.
    for (const r of requests) this.enqueued.add(r.deliveryId);
    // The oldest go first (a Set keeps insertion order); no copy of the set: it is full under a backlog.
    for (const id of this.enqueued) {
      if (this.enqueued.size <= ENQUEUED_MAX) break;
      this.enqueued.delete(id);
    }
    await Promise.all(requests.map((r) => this.enqueue(r.deliveryId, 0)));
  }
}
