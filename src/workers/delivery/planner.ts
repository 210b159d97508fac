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
import type { RecordedEvent, Subscription } from '../../gateways/event-store/port.js';
import { isLegEvent, maskSelects, toSocketEvent, type CallEndedData, type LegEventData, type LegEventType } from '../../domain/call-events.js';
import { streams } from '../../domain/streams.js';
import { deliveryIds, type DeliveryRequestedData } from '../../commands/delivery/delivery.js';
import type { ServiceDoc } from '../../projections/services.js';
import { DELIVERY_QUEUE, type DeliveryJob } from './sender.js';

export const PLANNER_CHECKPOINT = 'delivery-planner';

/** A subscriber document (read model `subscribers`, one per svc and agent). */
export interface SubscriberDoc extends Record<string, unknown> {
  id: string | number;
  url: string;
  is_registered: boolean;
  agent_id: number;
  svc_id: number;
  auth_key: string;
  channel_type: string;
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

export class DeliveryPlanner {
  private subscription: Subscription | null = null;
  private loop: Promise<void> | null = null;
  private stopped = false;
  private handled = 0;
  private committed = 0;

  constructor(private readonly ctx: Context) {}

  /** Position of the last event handled. */
  get position(): number {
    return this.handled;
  }

  async start(): Promise<void> {
    this.handled = this.committed = await this.ctx.reads.checkpoint(PLANNER_CHECKPOINT);
    this.subscription = this.ctx.events.subscribeToAll({ after: this.handled });
    this.loop = this.consume(this.subscription);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.subscription?.close();
    await this.loop;
    await this.saveCheckpoint().catch(() => {});
  }

  private async consume(sub: Subscription) {
    let sinceCommit = 0;
    try {
      for await (const event of sub) {
        const didWork = await this.handleWithRetry(event);
        if (this.stopped && didWork === null) break;
        this.handled = event.position;
        sinceCommit++;
        if (didWork || sinceCommit >= 200) {
          await this.saveCheckpoint();
          sinceCommit = 0;
        }
      }
    } catch (err) {
      if (!this.stopped) this.ctx.logger.error({ err }, 'delivery planner stopped: event subscription failed');
    }
  }

  private async saveCheckpoint() {
    if (this.handled > this.committed) {
      const position = this.handled;
      await this.ctx.reads.commit([], { [PLANNER_CHECKPOINT]: position });
      this.committed = position;
    }
  }

  /** true: work was done; false: nothing to do; null: gave up because the planner is stopping. */
  private async handleWithRetry(event: RecordedEvent): Promise<boolean | null> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.handle(event);
      } catch (err) {
        if (this.stopped) return null;
        this.ctx.logger.error({ err, attempt, position: event.position, type: event.type }, 'delivery planner: handling an event failed; retrying');
        await new Promise((r) => setTimeout(r, Math.min(5000, 50 * 2 ** attempt)));
      }
    }
  }

  private async handle(event: RecordedEvent): Promise<boolean> {
    if (event.type === 'CallEnded') return this.planWebhook(event);
    if (isLegEvent(event)) return this.planSubscribers(event);
    if (event.type === 'DeliveryRequested') {
      await this.enqueue((event.data as DeliveryRequestedData).deliveryId, 0);
      return true;
    }
    if (event.type === 'DeliveryRedeliveryRequested') {
      const d = event.data as { deliveryId: string; round: number };
      await this.enqueue(d.deliveryId, d.round);
      return true;
    }
    return false;
  }

  private async enqueue(deliveryId: string, round: number) {
    const job: DeliveryJob = { deliveryId, round };
    await this.ctx.queue.enqueue(DELIVERY_QUEUE, { id: deliveryIds.job(deliveryId, round), payload: job, backoffMs: this.ctx.config.webhookRetryMs });
  }

  private async planWebhook(event: RecordedEvent): Promise<boolean> {
    const call = event.data as CallEndedData;
    if (!call.webhook) return false;
    // The read models must include everything stored up to this event (a webhook set just before the call).
    await this.ctx.sync.waitFor(event.position);
    const service = await this.ctx.reads.get<ServiceDoc>('services', String(call.svcId));
    if (!service?.webhook?.url) return false;
    const deliveryId = deliveryIds.webhook(event.id);
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

  private async planSubscribers(event: RecordedEvent): Promise<boolean> {
    const leg = event.data as LegEventData;
    await this.ctx.sync.waitFor(event.position);
    const subs = await this.ctx.reads.find<SubscriberDoc>('subscribers', { svc_id: leg.svcId });
    const wanted = subs.filter((s) => subscriberWants(s, event.type as LegEventType, leg.agentId));
    if (wanted.length === 0) return false;
    const body = JSON.stringify(toSocketEvent(event));
    for (const s of wanted) {
      const subscriber = { svcId: leg.svcId, agentId: Number(s.agent_id ?? 0), id: String(s.id) };
      const deliveryId = deliveryIds.subscriber(event.id, subscriber);
      await this.request({
        deliveryId,
        kind: 'subscriber',
        svcId: leg.svcId,
        url: s.url,
        eventId: event.id,
        subscriber,
        webhookId: deliveryId,
        body,
        at: event.time,
      });
    }
    return true;
  }

  private async request(data: DeliveryRequestedData) {
    await this.ctx.events.appendToStream(
      streams.delivery(data.deliveryId),
      [{ type: 'DeliveryRequested', data, id: deliveryIds.requestedEvent(data.deliveryId) }],
      { expectedRevision: 'any' },
    );
  }
}
