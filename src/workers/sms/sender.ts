/**
 * Sends requested SMS as jobs of the `sms` queue (job id = SMS id, so a request is queued once).
 * Each try and its outcome is an event of `sms-<id>`; a failed try is retried after SMS_RETRY_MS
 * until `tries` are used up. At start, SMS still pending (a crash between the request and its
 * enqueue) are queued again; the id dedupes them.
 */
import type { Context } from '../../context.js';
import { handleCommand, loadAggregate } from '../../commands/decider.js';
import { smsDecider, type SmsRequestedData } from '../../commands/sms/sms.js';
import { streams } from '../../domain/streams.js';
import type { SmsDoc } from '../../projections/sms.js';

export const SMS_QUEUE = 'sms';

export function smsJob(ctx: Context, sms: Pick<SmsRequestedData, 'id' | 'tries'>) {
  return ctx.queue.enqueue(SMS_QUEUE, {
    id: sms.id,
    payload: { id: sms.id },
    backoffMs: Array.from({ length: Math.max(0, sms.tries - 1) }, () => ctx.config.smsRetryMs),
  });
}

export async function startSmsSender(ctx: Context): Promise<void> {
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
  for (const pending of await ctx.reads.find<SmsDoc>('sms', { status: 'pending' })) await smsJob(ctx, pending);
}
