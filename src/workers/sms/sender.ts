/**
 * Sends requested SMS. It follows `SmsRequested` in the log (as the scheduler follows
 * `CallScheduled`) and makes each a job of the `sms` queue (job id = SMS id, so a request is queued
 * once, however often the event is handed over: the follower is at least once). Each try and its
 * outcome is an event of `sms-<id>`; a failed try is retried after SMS_RETRY_MS until `tries` are
 * used up. A crash between a request and its job costs nothing: the follower's checkpoint moves only
 * after the job is stored, so the event is handed over again.
 */
import type { Context } from '../../context.js';
import { handleCommand, loadAggregate } from '../../commands/decider.js';
import { smsDecider, type SmsRequestedData } from '../../commands/sms/sms.js';
import { streams } from '../../domain/streams.js';
import { follow, type Follower } from '../follower.js';

export const SMS_QUEUE = 'sms';

function smsJob(ctx: Context, sms: Pick<SmsRequestedData, 'id' | 'tries'>) {
  return ctx.queue.enqueue(SMS_QUEUE, {
    id: sms.id,
    payload: { id: sms.id },
    backoffMs: Array.from({ length: Math.max(0, sms.tries - 1) }, () => ctx.config.smsRetryMs),
  });
}

export async function startSmsSender(ctx: Context): Promise<Follower> {
  ctx.queue.process<{ id: string }>(
    SMS_QUEUE,
    async (job) => {
      const stream = streams.sms(job.payload.id);
      const { state } = await loadAggregate(ctx.events, stream, smsDecider);
      if (state.status !== 'pending' || !state.requested) return;
      const attempt = state.attempts + 1;
      const r = state.requested;
      let error: string | undefined;
      try {
        await ctx.sms.send({ id: r.id, svcId: r.svcId, number: r.number, message: r.message });
      } catch (err) {
        error = err instanceof Error ? err.message : String(err);
      }
      await handleCommand(ctx.events, stream, smsDecider, { type: 'RecordAttempt', attempt, ok: error === undefined, error, time: ctx.now() });
      // Throwing asks the queue for the next try; after the last one the SMS is already marked failed.
      if (error !== undefined && attempt < r.tries) throw new Error(error);
    },
    { concurrency: 8 },
  );
  return follow(ctx, 'sms', ['SmsRequested'], async (e) => {
    const d = e.data;
    // An OTP's SMS is sent by the request itself (its SmsSent is in the same append).
    if (d.otp) return;
    await smsJob(ctx, d);
  });
}
