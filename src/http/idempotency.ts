/**
 * Idempotency-Key (CONTRACT section 2): the first response to a key (per credentials) is kept for
 * 24 hours and returned again for the same key without doing anything again. A request still
 * running under the key makes a repeat wait for it. Client errors are kept like successes (the same
 * request fails the same way); server errors are not, so a retry after an outage runs again.
 * Across processes (several `api` roles) the key is claimed in the read store first; a repeat that
 * finds a live claim waits for its response. The claim is short (CLAIM_MS) and renewed while the
 * request runs, so one a killed process left behind holds a retry for seconds, not a minute.
 *
 * The kept response is written after the command's events: a process killed in between leaves
 * events but no response. So a command with an effect outside (a call rung, an SMS sent) takes its
 * id from the key (`idFromKey`): the stream the retry would write is the one already written, its
 * decider finds it started and appends nothing, and the retry answers the same id. The key's record
 * is then part of the command's own atomic append.
 */
import { createHash } from 'node:crypto';
import type { Context } from '../context.js';
import { AppError, invalid } from '../domain/errors.js';
import { body as errorBody, toAppError } from './errors.js';

const TTL_MS = 24 * 60 * 60 * 1000;
const COLLECTION = 'idempotency';
const CLAIM_MS = 5_000;
/** Renewal period of a running request's claim: several renewals fit in a claim's life. */
const RENEW_MS = 1_000;
const POLL_MS = 25;
/** A response as sent: what a repeated key answers again. */
export interface Rendered {
  status: number;
  contentType: string;
  payload: string;
}

const inFlight = new Map<string, Promise<Rendered>>();

interface Stored extends Record<string, unknown> {
  response?: Rendered;
  claimedUntil?: number;
}

/** The stored response, once another process's run under the key has finished (null: claim it). */
async function awaitOther(ctx: Context, id: string): Promise<Rendered | null> {
  const deadline = Date.now() + CLAIM_MS;
  for (;;) {
    const stored = await ctx.reads.get<Stored>(COLLECTION, id);
    if (stored?.response) return stored.response;
    if (!stored || (stored.claimedUntil ?? 0) <= ctx.now() || Date.now() > deadline) return null;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** The record's id of a key under a scope (the credentials and the route). */
export function keyId(scope: string, key: string): string {
  if (key.length > 255) throw invalid('Idempotency-Key is longer than 255 characters');
  return createHash('sha256').update(scope).update('\u0000').update(key).digest('base64url');
}

/**
 * A UUID the request under key `id` (see `keyId`) gives what it creates (`what`: a call, an SMS): the
 * same for a retry, different for every other key and credentials. Version 8 (RFC 9562: custom).
 */
export function idFromKey(id: string, what: string): string {
  const b = createHash('sha256').update(id).update('\u0000').update(what).digest().subarray(0, 16);
  b[6] = (b[6]! & 0x0f) | 0x80;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** Keeps the claim on `id` alive while its request runs; `stop` ends it once no renewal is under way. */
function renewing(ctx: Context, id: string): { stop(): Promise<void> } {
  let pending: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    const claimedUntil = ctx.now() + CLAIM_MS;
    pending = pending.then(() => ctx.reads.put(COLLECTION, id, { claimedUntil }, { expiresAt: claimedUntil })).catch(() => {});
  }, RENEW_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await pending;
    },
  };
}

export async function idempotent(ctx: Context, scope: string, key: string, run: () => Promise<Rendered>): Promise<Rendered> {
  const id = keyId(scope, key);
  const running = inFlight.get(id);
  if (running) return running;
  // Registered before the first await, so a concurrent repeat joins this attempt instead of
  // racing it past the stored-response lookup.
  const attempt = (async () => {
    for (;;) {
      const done = await awaitOther(ctx, id);
      if (done) return done;
      const claimedUntil = ctx.now() + CLAIM_MS;
      if (await ctx.reads.insertIfAbsent(COLLECTION, id, { claimedUntil }, { expiresAt: claimedUntil })) break;
    }
    let rendered: Rendered;
    const claim = renewing(ctx, id);
    try {
      rendered = await run();
    } catch (err) {
      await claim.stop();
      const appErr = toAppError(err);
      if (!appErr || appErr.status >= 500 || appErr.status === 429 || appErr.status === 401) {
        await ctx.reads.delete(COLLECTION, id);
        throw err;
      }
      rendered = renderError(appErr);
    }
    await claim.stop();
    if (rendered.status < 500) await ctx.reads.put(COLLECTION, id, { response: rendered }, { expiresAt: ctx.now() + TTL_MS });
    else await ctx.reads.delete(COLLECTION, id);
    return rendered;
  })();
  inFlight.set(id, attempt);
  try {
    return await attempt;
  } finally {
    inFlight.delete(id);
  }
}

function renderError(err: AppError): Rendered {
  return { status: err.status, contentType: 'application/json; charset=utf-8', payload: JSON.stringify(errorBody(err)) };
}
