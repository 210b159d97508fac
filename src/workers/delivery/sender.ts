/**
 * The delivery sender: one attempt at a time, from a job of the queue or, for a round's first attempt,
 * straight from the planner (`first`). An attempt POSTs the delivery's body signed with the current key
 * of the service's webhook (or of the subscriber), records the attempt, and on the last unsuccessful
 * attempt of the round records the delivery as failed. An attempt for a round that is over (delivered,
 * failed, or superseded by a redelivery) does nothing, so a repeated run is harmless.
 */
import type { Context } from '../../context.js';
import { PermanentJobError, errorMessage, type Job, type JobHandler } from '../../gateways/queue/port.js';
import { handleCommand, loadAggregate } from '../../commands/decider.js';
import { aggregateCache } from '../../commands/aggregate-cache.js';
import { attemptDecider, deliveryIds, type DeliveryRequestedData, type DeliveryState } from '../../commands/delivery/delivery.js';
import { streams } from '../../domain/streams.js';
import { CONNECTIONS_PER_RECEIVER, isReceiverBusy, type HttpPoster } from '../../gateways/http-delivery/post.js';
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
 * Attempts in flight at once to one receiver (scheme, host and port), per process: four times the
 * connections its keep-alive pool keeps (CONNECTIONS_PER_RECEIVER, post.ts). The ones beyond the
 * connections wait in the pool on the posting thread, so a connection that comes free takes the next
 * POST at once, not after a turn of this thread's event loop (64 in flight held a local receiver to
 * about 6,000 deliveries/s with this thread a sixth idle). A quarter of the job slots
 * (DELIVERY_CONCURRENCY), so a receiver that hangs cannot take them all.
 */
export const PER_RECEIVER_CONCURRENCY = 4 * CONNECTIONS_PER_RECEIVER;

/**
 * Bounds the attempts in flight to each receiver, so one that hangs occupies at most
 * PER_RECEIVER_CONCURRENCY of the sender's slots and others keep being delivered on time. An attempt
 * that cannot start within the attempt time limit was never sent: a first attempt becomes a job, a
 * job's attempt fails ("receiver busy") and is retried on schedule.
 */
class ReceiverGate {
  private readonly inFlight = new Map<string, number>();
  private readonly waiting = new Map<string, Array<() => void>>();

  /** Attempts waiting for a slot to this receiver. */
  waitingFor(origin: string): number {
    return this.waiting.get(origin)?.length ?? 0;
  }

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

/**
 * First attempts made in memory at once, per process: past it, a round's first attempt is a job like
 * any other. Each holds its request (the body) and the planner's checkpoint until it is recorded.
 */
export const FIRST_ATTEMPTS_MAX = 16_384;
/** First attempts waiting for a slot to one receiver, at most: past it they are jobs, so a slow receiver cannot take every one. */
export const FIRST_ATTEMPTS_WAITING_PER_RECEIVER = 4_096;

export interface DeliverySender {
  /** The job queue's handler (DELIVERY_QUEUE): one attempt of a round per run. */
  readonly job: JobHandler<DeliveryJob>;
  /** Whether a first attempt to `url` would be made in memory now (else the planner enqueues a job). */
  takesFirst(url: string): boolean;
  /**
   * The round's first attempt, at once, on the state the planner just requested (no job, no read):
   * resolves once the attempt is recorded and, if it failed with retries left, its retry is a durable
   * job, or once the attempt is a job after all (its receiver kept it waiting past the time limit);
   * rejects when that could not be stored, and the delivery is then for the planner to enqueue.
   */
  first(state: DeliveryState): Promise<void>;
  /**
   * First attempts not yet posted give up at once, rejecting: the planner, stopping, leaves their
   * requests unpassed, so the next start enqueues them. POSTs under way end as usual.
   */
  stop(): void;
}

const STOPPING = Symbol('stopping');

/** An attempt's POST: its answer or why it failed (`permanent`: no retry can help), or why it was never sent (no slot, no connection). */
type Tried = { statusCode: number | null; error: string | null; permanent: boolean } | { busy: string };

export function deliverySender(ctx: Context, post: HttpPoster = threadedPoster()): DeliverySender {
  const gate = new ReceiverGate();
  const peek = peekable(ctx.reads);
  const schedule = ctx.config.webhookRetryMs;
  /** Resolved by stop(): first attempts still waiting for a slot give up (their requests hold the planner's checkpoint). */
  let stop!: () => void;
  const stopping = new Promise<typeof STOPPING>((resolve) => (stop = () => resolve(STOPPING)));
  /** The newest attempt of each delivery here (first or job): the next one of the same delivery waits for it. */
  const attempting = new Map<string, Promise<void>>();
  let firsts = 0;

  /**
   * Runs an attempt of the delivery once no other attempt of it runs in this process (a job read
   * back from the log and a first attempt, say); `waited` says whether one did, so its state is read
   * again rather than taken from the caller.
   */
  function oneAtATime(deliveryId: string, attempt: (waited: boolean) => Promise<void>): Promise<void> {
    const before = attempting.get(deliveryId);
    const run = before ? before.then(() => attempt(true)) : attempt(false);
    const end = run.catch(() => undefined);
    attempting.set(deliveryId, end);
    void end.then(() => {
      if (attempting.get(deliveryId) === end) attempting.delete(deliveryId);
    });
    return run;
  }

  /** POSTs the request signed with its current key, once its receiver has a slot for it. */
  async function tryPost(req: DeliveryRequestedData, first = false): Promise<Tried> {
    const found = currentSecret(ctx, peek, req);
    const key = found instanceof Promise ? await found : found;
    if ('error' in key) return { statusCode: null, error: key.error, permanent: true };
    const entered = gate.enter(originOf(req.url), ctx.config.webhookTimeoutMs);
    let leave: (() => void) | null;
    if (typeof entered === 'function') leave = entered;
    else {
      const won = first ? await Promise.race([entered, stopping]) : await entered;
      if (won === STOPPING) {
        // A slot that comes later is given back at once.
        void entered.then((l) => l?.());
        throw new Error('delivery worker stopping: the attempt is left to the next start');
      }
      leave = won;
    }
    if (!leave) return { busy: `receiver busy: ${PER_RECEIVER_CONCURRENCY} attempts to it still running after ${ctx.config.webhookTimeoutMs} ms` };
    try {
      // Signed by the poster, on its thread.
      const sign = { secret: key.secret, id: req.webhookId, timestampS: Math.floor(ctx.now() / 1000) };
      const res = await post(req.url, req.body, { timeoutMs: ctx.config.webhookTimeoutMs, allowPrivate: ctx.config.webhookAllowPrivate, sign });
      const ok = res.statusCode >= 200 && res.statusCode <= 299;
      return { statusCode: res.statusCode, error: ok ? null : `receiver answered HTTP ${res.statusCode}`, permanent: false };
    } catch (err) {
      return isReceiverBusy(err) ? { busy: errorMessage(err) } : { statusCode: null, error: errorMessage(err), permanent: false };
    } finally {
      leave();
    }
  }

  /** Records attempt `number` of the state's round; a failed one is the round's last when permanent or `exhausted`. */
  async function record(state: DeliveryState, number: number, tried: Exclude<Tried, { busy: string }>, exhausted: boolean): Promise<{ error: string | null; last: boolean }> {
    const req = state.request!;
    const { statusCode, error } = tried;
    const last = tried.permanent || exhausted;
    await handleCommand(ctx.events, streams.delivery(req.deliveryId), attemptDecider, { type: 'RecordAttempt', round: state.round, attempt: number, at: ctx.now(), statusCode, error, last });
    ctx.metrics.delivery(req.kind, error === null ? 'delivered' : last ? 'failed' : 'retry');
    return { error, last };
  }

  const job: JobHandler<DeliveryJob> = (job: Job<DeliveryJob>) =>
    oneAtATime(job.payload.deliveryId, async (waited) => {
      const { deliveryId, round } = job.payload;
      const streamId = streams.delivery(deliveryId);
      // A round's first attempt starts from the state the planner remembered when it requested the
      // delivery (nothing else writes to the stream before that attempt is recorded): no read. Anything
      // else, or a state that would skip the attempt, is read from the store.
      const peeked = round === 0 && job.attempt === 1 && !waited ? aggregateCache(ctx.events).peek(streamId, attemptDecider) : undefined;
      const ready = peeked && peeked.state.request && peeked.state.status === 'pending' && peeked.state.round === 0 && peeked.state.roundAttempts === 0;
      const { state } = ready ? peeked : await loadAggregate(ctx.events, streamId, attemptDecider);
      if (!state.request || state.status !== 'pending' || state.round !== round) return;
      // Numbered by the attempts the round recorded (a first attempt made without a job counts); the
      // round ends with the schedule, or with the job's own retries should they be fewer.
      const number = state.roundAttempts + 1;
      const tried = await tryPost(state.request);
      // Never sent: a failed attempt all the same, retried on schedule.
      const outcome = 'busy' in tried ? { statusCode: null, error: tried.busy, permanent: false } : tried;
      const { error, last } = await record(state, number, outcome, number > schedule.length || job.attempt >= job.maxAttempts);
      if (error !== null) throw last ? new PermanentJobError(error) : new Error(error);
    });

  /** The round's first attempt; its retry, if it needs one, is then a job of the rest of the schedule. */
  async function runFirst(requested: DeliveryState, waited: boolean): Promise<void> {
    const req = requested.request!;
    // Another attempt of it ran here first (a job): only what it left pending is tried.
    const state = waited ? (await loadAggregate(ctx.events, streams.delivery(req.deliveryId), attemptDecider)).state : requested;
    if (waited && (state.status !== 'pending' || state.round !== requested.round || state.roundAttempts !== requested.roundAttempts)) return;
    const asJob = (options: { delayMs?: number; backoffMs: number[] }) =>
      ctx.queue.enqueue<DeliveryJob>(DELIVERY_QUEUE, { id: deliveryIds.job(req.deliveryId, state.round), payload: { deliveryId: req.deliveryId, round: state.round }, ...options });
    const tried = await tryPost(req, true);
    // Kept waiting past the time limit, it was never tried: a job like any other, its whole schedule ahead.
    if ('busy' in tried) return asJob({ backoffMs: schedule });
    const number = state.roundAttempts + 1;
    const { error, last } = await record(state, number, tried, number > schedule.length);
    if (error !== null && !last) await asJob({ delayMs: schedule[number - 1]!, backoffMs: schedule.slice(number) });
  }

  return {
    job,
    stop,
    takesFirst(url) {
      return firsts < FIRST_ATTEMPTS_MAX && gate.waitingFor(originOf(url)) < FIRST_ATTEMPTS_WAITING_PER_RECEIVER;
    },
    first(state) {
      firsts++;
      const run = oneAtATime(state.request!.deliveryId, (waited) => runFirst(state, waited));
      void run.then(
        () => firsts--,
        () => firsts--,
      );
      return run;
    },
  };
}
