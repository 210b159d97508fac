/**
 * Requesting an SMS (`POST /send-sms`): the checks and the `SmsRequested` event. Sending is the SMS
 * worker's job: it follows `SmsRequested` in the log (src/workers/sms/sender.ts), so an
 * acknowledged request is sent even if this process dies right after the append.
 */
import { randomUUID } from 'node:crypto';
import type { Context } from '../../context.js';
import { handleCommand } from '../decider.js';
import { smsDecider, type SmsRequestedData } from './sms.js';
import { streams } from '../../domain/streams.js';
import { invalid } from '../../domain/errors.js';

export interface SmsRequest {
  svcId: number;
  number: string;
  message: string;
  countryCode?: string;
  callTxnId?: string | null;
  tries?: number;
  userId: number | null;
  /** The SMS id; a retried request gives the first one's, so the SMS is requested (and sent) once. */
  id?: string;
}

/** Records the request; answers the SMS id and the position of its event. */
export async function requestSms(ctx: Context, req: SmsRequest): Promise<{ id: string; position: number }> {
  if (req.message.trim() === '') throw invalid('message must not be empty');
  const data: SmsRequestedData = {
    id: req.id ?? randomUUID(),
    svcId: req.svcId,
    number: req.number,
    message: req.message,
    countryCode: req.countryCode ?? '',
    callTxnId: req.callTxnId ?? null,
    tries: req.tries ?? 1,
    otp: false,
    userId: req.userId,
    time: ctx.now(),
  };
  // Sending runs through the job queue: while it cannot be reached the request is a 503 with
  // nothing recorded, rather than an SMS accepted that waits for the outage to end.
  await ctx.queue.ready?.();
  const r = await handleCommand(ctx.events, streams.sms(data.id), smsDecider, { type: 'Request', data });
  return { id: data.id, position: r.position };
}
