/**
 * The delivery job: one attempt per run. Reads the delivery's stream, POSTs its body signed with the
 * current key of the service's webhook (or of the subscriber), records the attempt, and on the last
 * unsuccessful attempt of the round records the delivery as failed. A job for a round that is over
 * (delivered, failed, or superseded by a redelivery) does nothing, so a repeated run is harmless.
 */
import type { Context } from '../../context.js';
import { PermanentJobError, errorMessage, type Job } from '../../gateways/queue/port.js';
import { handleCommand, loadAggregate } from '../../commands/decider.js';
import { aggregateCache } from '../../commands/aggregate-cache.js';
import { attemptDecider, type DeliveryRequestedData } from '../../commands/delivery/delivery.js';
import { streams } from '../../domain/streams.js';
import { signedHeaders } from '../../gateways/http-delivery/signing.js';
import type { HttpPoster } from '../../gateways/http-delivery/post.js';
import { threadedPoster } from '../../gateways/http-delivery/threaded.js';
import type { ServiceDoc } from '../../projections/services.js';
import type { SubscriberDoc } from '../../projections/subscribers.js';

export const DELIVERY_QUEUE = 'deliveries';

export interface DeliveryJob {
  deliveryId: string;
  round: number;
}

/** The key a delivery is signed with now, or why there is none. */
async function currentSecret(ctx: Context, req: DeliveryRequestedData): Promise<{ secret: string } | { error: string }> {
  if (req.kind === 'webhook') {
    const svc = await ctx.reads.get<ServiceDoc>('services', String(req.svcId));
    if (!svc?.webhook?.secret) return { error: `service ${req.svcId} has no webhook any more` };
    return { secret: svc.webhook.secret };
  }
  const s = req.subscriber!;
  const docs = await ctx.reads.find<SubscriberDoc>('subscribers', { svc_id: s.svcId });
  const doc = docs.find((d) => Number(d.agent_id ?? 0) === s.agentId && String(d.id) === s.id);
  if (!doc) return { error: `subscriber ${s.id} of service ${s.svcId} was removed or replaced` };
  if (typeof doc.auth_key !== 'string' || doc.auth_key === '') return { error: `subscriber ${s.id} has no auth key` };
  return { secret: doc.auth_key };
}

/**
 * Attempts in flight at once to one receiver (scheme, host and port), per process: as many as the
 * keep-alive pool keeps connections to it (post.ts), a quarter of the sender's slots, so a busy
 * receiver is not held to 16 while the sender has slots to spare.
 */
export const PER_RECEIVER_CONCURRENCY = 64;

/**
 * Bounds the attempts in flight to each receiver, so one that hangs occupies at most
 * PER_RECEIVER_CONCURRENCY of the sender's slots and others keep being delivered on time. An attempt
 * that cannot start within the attempt time limit fails like a timeout and is retried on schedule.
 */
class ReceiverGate {
  private readonly inFlight = new Map<string, number>();
  private readonly waiting = new Map<string, Array<() => void>>();

  async enter(origin: string, timeoutMs: number): Promise<(() => void) | null> {
    if ((this.inFlight.get(origin) ?? 0) >= PER_RECEIVER_CONCURRENCY) {
      const admitted = await new Promise<boolean>((resolve) => {
        const queue = this.waiting.get(origin) ?? [];
        this.waiting.set(origin, queue);
        const wake = () => {
          clearTimeout(timer);
          resolve(true);
        };
        const timer = setTimeout(() => {
          const i = queue.indexOf(wake);
          if (i >= 0) queue.splice(i, 1);
          resolve(false);
        }, timeoutMs);
        queue.push(wake);
      });
      if (!admitted) return null;
    } else {
      this.inFlight.set(origin, (this.inFlight.get(origin) ?? 0) + 1);
    }
    let left = false;
    return () => {
      if (left) return;
      left = true;
      // The slot passes straight to the next waiter, or is given back.
      const next = this.waiting.get(origin)?.shift();
      if (next) return next();
      const n = (this.inFlight.get(origin) ?? 1) - 1;
      if (n > 0) this.inFlight.set(origin, n);
      else this.inFlight.delete(origin);
    };
  }
}

/** Receivers' origins by URL: parsed once per URL, not per attempt (a URL parse showed in profiles). */
const origins = new Map<string, string>();

function originOf(url: string): string {
  let origin = origins.get(url);
  if (origin === undefined) {
    try {
      origin = new URL(url).origin;
    } catch {
      origin = url;
    }
    if (origins.size >= 10_000) origins.delete(origins.keys().next().value!);
    origins.set(url, origin);
  }
  return origin;
}

export function deliveryHandler(ctx: Context, post: HttpPoster = threadedPoster()) {
  const gate = new ReceiverGate();
  return async (job: Job<DeliveryJob>): Promise<void> => {
    const { deliveryId, round } = job.payload;
    const streamId = streams.delivery(deliveryId);
    // A round's first attempt starts from the state the planner remembered when it requested the
    // delivery (nothing else writes to the stream before that attempt is recorded): no read. Anything
    // else, or a state that would skip the attempt, is read from the store.
    const peeked = round === 0 && job.attempt === 1 ? aggregateCache(ctx.events).peek(streamId, attemptDecider) : undefined;
    const ready = peeked && peeked.state.request && peeked.state.status === 'pending' && peeked.state.round === 0;
    const { state } = ready ? peeked : await loadAggregate(ctx.events, streamId, attemptDecider);
    const req = state.request;
    if (!req || state.status !== 'pending' || state.round !== round) return;

    let statusCode: number | null = null;
    let error: string | null = null;
    let permanent = false;
    const key = await currentSecret(ctx, req);
    if ('error' in key) {
      error = key.error;
      permanent = true;
    } else {
      const leave = await gate.enter(originOf(req.url), ctx.config.webhookTimeoutMs);
      if (!leave) {
        error = `receiver busy: ${PER_RECEIVER_CONCURRENCY} attempts to it still running after ${ctx.config.webhookTimeoutMs} ms`;
      } else {
        try {
          const headers = signedHeaders(key.secret, req.webhookId, Math.floor(ctx.now() / 1000), req.body);
          const res = await post(req.url, req.body, { timeoutMs: ctx.config.webhookTimeoutMs, allowPrivate: ctx.config.webhookAllowPrivate, headers });
          statusCode = res.statusCode;
          if (statusCode < 200 || statusCode > 299) error = `receiver answered HTTP ${statusCode}`;
        } catch (err) {
          error = errorMessage(err);
        } finally {
          leave();
        }
      }
    }
    const at = ctx.now();
    const last = permanent || job.attempt >= job.maxAttempts;
    await handleCommand(ctx.events, streamId, attemptDecider, { type: 'RecordAttempt', round, attempt: job.attempt, at, statusCode, error, last });
    ctx.metrics.delivery(req.kind, error === null ? 'delivered' : last ? 'failed' : 'retry');
    if (error !== null) throw last ? new PermanentJobError(error) : new Error(error);
  };
}
