/** Issuing and checking OTPs: the slow hashing and the SMS happen here, around the pure decider. */
import { randomInt, randomUUID } from 'node:crypto';
import type { Context } from '../../context.js';
import { handleStreams, loadAggregate, type StreamWrite } from '../decider.js';
import { otpDecider, sendRetryAfter, type OtpState } from './otp.js';
import type { SmsEvent } from '../sms/sms.js';
import { streams } from '../../domain/streams.js';
import { AppError, invalid, unavailable } from '../../domain/errors.js';
import { hashPassword, verifyPassword } from '../../domain/password.js';

const OTP_RE = /^\d{6}$/;

async function load(ctx: Context, svcId: number, number: string) {
  return loadAggregate(ctx.events, streams.otp(svcId, number), otpDecider);
}

/** Claims on a number while a code for it is being sent (read store, so every `api` process sees them). */
const SENDING = 'otp-sending';
/** A claim whose holder died lapses after this; a send takes well under it. */
const SEND_CLAIM_MS = 30_000;
const CLAIM_POLL_MS = 20;

/**
 * The send limit is decided on the number's stream with its expected revision, but the SMS goes out
 * before that append: requests for one number racing each other (in one process or several) would
 * each pass the check and each send an SMS, though only the limit's worth of codes would be stored.
 * So one send per number at a time, across processes: the next waits, then sees the stored count.
 */
async function oneSendAtATime<T>(ctx: Context, svcId: number, number: string, run: () => Promise<T>): Promise<T> {
  const id = `${svcId}:${number}`;
  const deadline = Date.now() + SEND_CLAIM_MS;
  while (!(await ctx.reads.insertIfAbsent(SENDING, id, { pid: process.pid }, { expiresAt: ctx.now() + SEND_CLAIM_MS }))) {
    if (Date.now() > deadline) throw unavailable(`another code for ${number} is still being sent; try again`);
    await new Promise((r) => setTimeout(r, CLAIM_POLL_MS));
  }
  try {
    return await run();
  } finally {
    await ctx.reads.delete(SENDING, id).catch((err) => ctx.logger.warn({ err: String(err) }, 'OTP send claim not released; it lapses'));
  }
}

/** Issues a new code (replacing any previous one), sends it by SMS and returns it. */
export function issueOtp(ctx: Context, svcId: number, number: string, keyword: string, userId: number | null): Promise<{ code: string; position: number }> {
  return oneSendAtATime(ctx, svcId, number, () => issue(ctx, svcId, number, keyword, userId));
}

async function issue(ctx: Context, svcId: number, number: string, keyword: string, userId: number | null): Promise<{ code: string; position: number }> {
  const { otpTtlS, otpSendsPer15Min } = ctx.config;
  const first = await load(ctx, svcId, number);
  const wait = sendRetryAfter(first.state, ctx.now(), otpSendsPer15Min);
  if (wait > 0) throw new AppError('RATE_LIMITED', `number ${number} got ${otpSendsPer15Min} codes in 15 minutes; try again later`, { 'retry-after': String(wait) });

  const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
  const hash = await hashPassword(code);
  const smsId = randomUUID();
  const text = (c: string) => `${c} is your ${keyword} code. It is valid for ${Math.max(1, Math.round(otpTtlS / 60))} minutes.`;
  try {
    await ctx.sms.send({ id: smsId, svcId, number, message: text(code) });
  } catch (err) {
    ctx.logger.warn({ err: String(err), svcId }, 'OTP SMS not accepted by the gateway');
    throw unavailable('the SMS gateway did not accept the code; try again');
  }
  const otpStream = streams.otp(svcId, number);
  const r = await handleStreams(ctx.events, [{ streamId: otpStream, decider: otpDecider }], ([otp]) => {
    const time = ctx.now();
    const otpEvents = otpDecider.decide({ type: 'Issue', svcId, number, hash, keyword, smsId, time, ttlMs: otpTtlS * 1000, maxSends: otpSendsPer15Min }, otp!.state);
    const smsEvents: SmsEvent[] = [
      { type: 'SmsRequested', data: { id: smsId, svcId, number, message: text('******'), countryCode: '', callTxnId: null, tries: 1, otp: true, userId, time } },
      { type: 'SmsSent', data: { id: smsId, svcId, time, attempt: 1 } },
    ];
    return { appends: [{ streamId: otpStream, events: otpEvents }, { streamId: streams.sms(smsId), events: smsEvents, expectedRevision: 'no_stream' }], value: null };
  });
  return { code, position: r.position };
}

/**
 * Checks a code and spends it. A wrong code is recorded (and voids the code after OTP_MAX_ATTEMPTS)
 * before the 400. `alsoAppend` is stored in the same transaction as the spending (click2call's call),
 * so a code is never spent without its call, nor a call placed without spending the code.
 */
export async function verifyOtp(
  ctx: Context,
  svcId: number,
  number: string,
  code: string,
  purpose: 'validate' | 'click2call',
  alsoAppend: StreamWrite[] = [],
): Promise<number> {
  if (!OTP_RE.test(code)) throw invalid('otp must be the 6-digit code');
  const otpStream = streams.otp(svcId, number);
  const r = await handleStreams(ctx.events, [{ streamId: otpStream, decider: otpDecider }], async ([otp]) => {
    const state = otp!.state as OtpState;
    const matches = state.current ? await verifyPassword(code, state.current.hash) : false;
    const events = otpDecider.decide(
      { type: 'Verify', svcId, number, hash: state.current?.hash ?? null, matches, time: ctx.now(), maxAttempts: ctx.config.otpMaxAttempts, purpose },
      state,
    );
    const verified = events.some((e) => e.type === 'OtpVerified');
    return { appends: [{ streamId: otpStream, events }, ...(verified ? alsoAppend : [])], value: verified };
  });
  if (!r.value) throw invalid('otp is wrong');
  return r.position;
}
