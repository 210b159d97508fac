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
import type { HttpPoster } from '../../gateways/http-delivery/post.js';
import { threadedPoster } from '../../gateways/http-delivery/threaded.js';
import type { ServiceDoc } from '../../projections/services.js';
import type { SubscriberDoc } from '../../projections/subscribers.js';
import { peekable, type PeekableReads } from '../../gateways/read-store/port.js';

export const DELIVERY_QUEUE = 'deliveries';

export interface DeliveryJob {
  deliveryId: string;
  round: number;
}

/** A service's document: peeked where the read store keeps services in memory (`peekable`), else read. */
export function serviceDoc(ctx: Context, peek: PeekableReads | null, svcId: number): ServiceDoc | null | Promise<ServiceDoc | null> {
  const doc = peek?.peek<ServiceDoc>('services', String(svcId));
  return doc === undefined ? ctx.reads.get<ServiceDoc>('services', String(svcId)) : doc;
}

type Key = { secret: string } | { error: string };

/** The key a delivery is signed with now, or why there is none (a webhook's without a promise where its service is peeked). */
function currentSecret(ctx: Context, peek: PeekableReads | null, req: DeliveryRequestedData): Key | Promise<Key> {
  if (req.kind === 'webhook') {
    const svc = serviceDoc(ctx, peek, req.svcId);
    return svc instanceof Promise ? svc.then((doc) => webhookSecret(doc, req)) : webhookSecret(svc, req);
  }
  return subscriberSecret(ctx, req);
}

function webhookSecret(svc: ServiceDoc | null, req: DeliveryRequestedData): Key {
  if (!svc?.webhook?.secret) return { error: `service ${req.svcId} has no webhook any more` };
  return { secret: svc.webhook.secret };
}

async function subscriberSecret(ctx: Context, req: DeliveryRequestedData): Promise<Key> {
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

  /** The slot's release at once when one is free (no promise: the usual case), else once one is, or null on timeout. */
  enter(origin: string, timeoutMs: number): (() => void) | Promise<(() => void) | null> {
    const n = this.inFlight.get(origin) ?? 0;
    if (n < PER_RECEIVER_CONCURRENCY) {
      this.inFlight.set(origin, n + 1);
      return this.leave(origin);
    }
    return this.wait(origin, timeoutMs);
  }

  private async wait(origin: string, timeoutMs: number): Promise<(() => void) | null> {
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
    return admitted ? this.leave(origin) : null;
  }

  private leave(origin: string): () => void {
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
  const peek = peekable(ctx.reads);
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
    const found = currentSecret(ctx, peek, req);
    const key = found instanceof Promise ? await found : found;
    if ('error' in key) {
      error = key.error;
      permanent = true;
    } else {
      const entered = gate.enter(originOf(req.url), ctx.config.webhookTimeoutMs);
      const leave = typeof entered === 'function' ? entered : await entered;
      if (!leave) {
        error = `receiver busy: ${PER_RECEIVER_CONCURRENCY} attempts to it still running after ${ctx.config.webhookTimeoutMs} ms`;
      } else {
        try {
          // Signed by the poster, on its thread.
          const sign = { secret: key.secret, id: req.webhookId, timestampS: Math.floor(ctx.now() / 1000) };
          const res = await post(req.url, req.body, { timeoutMs: ctx.config.webhookTimeoutMs, allowPrivate: ctx.config.webhookAllowPrivate, sign });
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
