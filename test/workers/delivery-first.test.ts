/**
 * First attempts made in memory: the planner hands each delivery it requested to the sender at once,
 * with no job; the job queue holds only retries, and attempts that never got a slot. The planner's
 * checkpoint stays at a DeliveryRequested until its first attempt is recorded, so a first attempt that
 * could not be recorded is enqueued from the log. A poster under the test's control stands in for HTTP.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { exampleDoc, startServer, type TestServer } from '../support/server.js';
import { until } from '../support/until.js';
import type { CallEndedData } from '../../src/domain/call-events.js';
import { streams } from '../../src/domain/streams.js';
import { DeliveryPlanner } from '../../src/workers/delivery/planner.js';
import { DELIVERY_QUEUE, PER_RECEIVER_CONCURRENCY, deliverySender } from '../../src/workers/delivery/sender.js';
import { DELIVERY_CONCURRENCY } from '../../src/workers/delivery/index.js';
import type { HttpPoster, PostResult } from '../../src/gateways/http-delivery/post.js';
import type { EventStore, RecordedEvent } from '../../src/gateways/event-store/port.js';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const HOOK = 'http://hooks.test/hook';

/** POSTs the test answers one by one: each waits for `answer`. */
interface Post {
  webhookId: string;
  answer(result: PostResult | Error): void;
}

describe('first attempts without a job', () => {
  let s: TestServer;
  let planner: DeliveryPlanner;
  const posts: Post[] = [];
  /** How the next POSTs are answered at once (null: the test answers them). */
  let answerAtOnce: number | null = null;
  const handed = new Set<string>();

  const poster: HttpPoster = (_url, _body, options) =>
    answerAtOnce !== null
      ? Promise.resolve({ statusCode: answerAtOnce })
      : new Promise<PostResult>((resolve, reject) => posts.push({ webhookId: options.sign!.id, answer: (r) => (r instanceof Error ? reject(r) : resolve(r)) }));

  beforeAll(async () => {
    // No worker role: this test runs the planner and the sender itself, with its poster.
    s = await startServer({ ROLES: 'api,projector', WEBHOOK_RETRY_MS: '50,100', WEBHOOK_TIMEOUT_MS: '1500' });
    const doc = exampleDoc();
    doc.services[0].webhook = { url: HOOK, secret: SECRET };
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: doc })).status).toBe(200);
    const sender = deliverySender(s.platform.ctx, poster);
    s.platform.ctx.queue.process(DELIVERY_QUEUE, sender.job, { concurrency: DELIVERY_CONCURRENCY });
    planner = new DeliveryPlanner(s.platform.ctx, sender);
    // The events the planner was handed (its checkpoint says only what it passed).
    const spied = planner as unknown as { handle: (e: RecordedEvent, hold: unknown) => Promise<boolean> };
    const handle = spied.handle.bind(planner);
    spied.handle = (e, hold) => {
      handed.add(e.id);
      return handle(e, hold);
    };
    await planner.start();
  });
  afterEach(() => {
    answerAtOnce = null;
  });
  afterAll(async () => {
    answerAtOnce = 200;
    for (const p of posts.splice(0)) p.answer({ statusCode: 200 });
    await planner.stop();
    await s.stop();
  });

  const events = () => s.platform.ctx.events;

  async function endCall(): Promise<string> {
    const xnid = randomUUID();
    const data: CallEndedData = {
      xnid, svcId: 101, direction: 'Outbound', disposition: 'answered', startTime: 0, endTime: 1000, durationS: 1, agentId: null, agentNumber: '', customerNumber: '9876543210', recordingUrl: null, source: null,
      webhook: { callid: xnid, 'call-duration': '1', 'agent-number': '', 'customer-number': '9876543210', 'end-time': '2024-05-01 10:00:01', 'start-time': '2024-05-01 10:00:00', 'call-type': 'outgoing', 'virtual-number': '8000000101', disposition: 'answered' },
    };
    await events().appendToStream(streams.call(xnid), [{ type: 'CallEnded', data }]);
    return xnid;
  }

  const postOf = (callid: string) => until(() => posts.find((p) => p.webhookId === callid), `the POST of ${callid}`);

  async function deliveryOf(callid: string, status?: string): Promise<{ id: string; status: string; attempts: { statusCode: number | null; error: string | null }[] }> {
    return until(async () => {
      const all = (await (await s.ops('/ops/v1/deliveries?svc-id=101')).json()) as { id: string; callid: string; status: string; attempts: [] }[];
      return all.find((d) => d.callid === callid && (!status || d.status === status));
    }, `the delivery of ${callid} ${status ?? ''}`);
  }

  /** The delivery's events as stored: types and attempt numbers. */
  async function storedOf(id: string) {
    return (await events().readStream(streams.delivery(id))).map((e) => (e.type === 'DeliveryAttempted' ? `attempt ${(e.data as { attempt: number }).attempt}` : e.type));
  }

  it('posts once the request is stored, with no job; the checkpoint waits at the request until the attempt is recorded', async () => {
    const callid = await endCall();
    const post = await postOf(callid);
    const pending = await deliveryOf(callid, 'pending');
    const [requested] = await events().readStream(streams.delivery(pending.id));
    // Read back by the planner, and held: its checkpoint stays before the request.
    await until(() => handed.has(requested!.id), 'the planner to read the request back');
    expect(planner.position).toBeLessThan(requested!.position);
    post.answer({ statusCode: 200 });
    const d = await deliveryOf(callid, 'delivered');
    expect(d.attempts).toEqual([expect.objectContaining({ statusCode: 200, error: null })]);
    expect(await s.platform.ctx.queue.getJob(DELIVERY_QUEUE, d.id)).toBeNull();
    await until(() => planner.position > requested!.position, 'the checkpoint to pass the request');
  });

  it('a failed first attempt leaves the rest of the schedule to a job, numbered on from it', async () => {
    const callid = await endCall();
    (await postOf(callid)).answer({ statusCode: 503 });
    const retry = await until(() => posts.filter((p) => p.webhookId === callid)[1], 'the retry');
    const pending = await deliveryOf(callid);
    expect(await s.platform.ctx.queue.getJob(DELIVERY_QUEUE, pending.id)).toMatchObject({ state: 'active', attempts: 1 });
    retry.answer({ statusCode: 500 });
    const last = await until(() => posts.filter((p) => p.webhookId === callid)[2], 'the last retry');
    last.answer(new Error('connection reset'));
    const d = await deliveryOf(callid, 'failed');
    // Three attempts in all (the schedule's two retries), the job's two runs being the last two.
    expect(d.attempts.map((a) => a.error)).toEqual(['receiver answered HTTP 503', 'receiver answered HTTP 500', 'connection reset']);
    expect(await storedOf(d.id)).toEqual(['DeliveryRequested', 'attempt 1', 'attempt 2', 'attempt 3', 'DeliveryFailed']);
    expect(await s.platform.ctx.queue.getJob(DELIVERY_QUEUE, d.id)).toMatchObject({ state: 'failed', attempts: 2 });
  });

  it('a first attempt kept waiting for its receiver past the time limit becomes a job, with no attempt recorded for the wait', async () => {
    const busy: string[] = [];
    for (let i = 0; i < PER_RECEIVER_CONCURRENCY; i++) busy.push(await endCall());
    await until(() => busy.every((c) => posts.some((p) => p.webhookId === c)), 'every slot to the receiver taken');
    const waiting = await endCall();
    const pending = await deliveryOf(waiting, 'pending');
    // After WEBHOOK_TIMEOUT_MS without a slot: a job, with nothing tried.
    await until(async () => (await s.platform.ctx.queue.getJob(DELIVERY_QUEUE, pending.id)) !== null, 'the waiting attempt to become a job', 5_000);
    expect(posts.some((p) => p.webhookId === waiting)).toBe(false);
    answerAtOnce = 200;
    for (const p of posts.splice(0)) p.answer({ statusCode: 200 });
    const d = await deliveryOf(waiting, 'delivered');
    expect(d.attempts).toEqual([expect.objectContaining({ statusCode: 200, error: null })]);
    for (const c of busy) await deliveryOf(c, 'delivered');
  });

  it('stopping gives up the first attempts still waiting for a slot: the next planner reads their requests again and enqueues them', async () => {
    const busy: string[] = [];
    for (let i = 0; i < PER_RECEIVER_CONCURRENCY; i++) busy.push(await endCall());
    await until(() => busy.every((c) => posts.some((p) => p.webhookId === c)), 'every slot to the receiver taken');
    const waiting = [await endCall(), await endCall()];
    const requests = await Promise.all(waiting.map(async (c) => (await events().readStream(streams.delivery((await deliveryOf(c, 'pending')).id)))[0]!));
    await until(() => requests.every((r) => handed.has(r.id)), 'the waiting requests read back');
    // The stop waits for the POSTs under way, not for the attempts waiting behind them.
    const stopped = planner.stop();
    for (const p of posts.splice(0)) p.answer({ statusCode: 200 });
    await stopped;
    for (const c of busy) await deliveryOf(c, 'delivered');
    expect(planner.position).toBeLessThan(Math.min(...requests.map((r) => r.position)));
    for (const r of requests) expect(await storedOf((r.data as { deliveryId: string }).deliveryId)).toEqual(['DeliveryRequested']);
    // The next start: from the stored checkpoint, the requests are read again and become jobs.
    answerAtOnce = 200;
    planner = new DeliveryPlanner(s.platform.ctx, deliverySender(s.platform.ctx, poster));
    await planner.start();
    for (const c of waiting) expect((await deliveryOf(c, 'delivered')).attempts).toEqual([expect.objectContaining({ statusCode: 200 })]);
    for (const r of requests) expect(await s.platform.ctx.queue.getJob(DELIVERY_QUEUE, (r.data as { deliveryId: string }).deliveryId)).toMatchObject({ state: 'completed' });
  });

  it('a first attempt that could not be recorded is enqueued from the log, and attempted again', async () => {
    // Set on the store itself (ctx.events is a proxy without a set trap), so every writer goes through it.
    const store = events() as EventStore;
    const append = (Object.getPrototypeOf(store) as EventStore).appendToStream;
    let refused = 0;
    // The store refuses the attempt's record once (the request before it is stored).
    store.appendToStream = function (this: EventStore, streamId, evs, options) {
      if (refused === 0 && evs.some((e) => e.type === 'DeliveryAttempted')) {
        refused++;
        return Promise.reject(new Error('disk I/O error'));
      }
      return append.call(this, streamId, evs, options);
    };
    try {
      const callid = await endCall();
      (await postOf(callid)).answer({ statusCode: 200 });
      const again = await until(() => posts.filter((p) => p.webhookId === callid)[1], 'the attempt made again by a job');
      again.answer({ statusCode: 200 });
      const d = await deliveryOf(callid, 'delivered');
      expect(refused).toBe(1);
      expect(await storedOf(d.id)).toEqual(['DeliveryRequested', 'attempt 1']);
      expect(await s.platform.ctx.queue.getJob(DELIVERY_QUEUE, d.id)).toMatchObject({ state: 'completed' });
    } finally {
      delete (store as { appendToStream?: unknown }).appendToStream;
    }
  });
});
