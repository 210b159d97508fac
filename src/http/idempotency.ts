/**
 * Idempotency-Key (CONTRACT section 2): the first response to a key (per credentials) is kept for
 * 24 hours and returned again for the same key without doing anything again. A request still
 * running under the key makes a repeat wait for it. Client errors are kept like successes (the same
 * request fails the same way); server errors are not, so a retry after an outage runs again.
 * Across processes (several `api` roles) the key is claimed in the read store first; a repeat that
 * finds a live claim waits for its response. A claim lapses after CLAIM_MS, so a crashed claimer
 * blocks nobody for long.
 */
import { createHash } from 'node:crypto';
import type { Context } from '../context.js';
import { AppError, invalid } from '../domain/errors.js';
import { body as errorBody, toAppError } from './errors.js';

const TTL_MS = 24 * 60 * 60 * 1000;
const COLLECTION = 'idempotency';
const CLAIM_MS = 60_000;
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

export async function idempotent(ctx: Context, scope: string, key: string, run: () => Promise<Rendered>): Promise<Rendered> {
  if (key.length > 255) throw invalid('Idempotency-Key is longer than 255 characters');
  const id = createHash('sha256').update(scope).update('\u0000').update(key).digest('base64url');
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
    try {
      rendered = await run();
    } catch (err) {
      const appErr = toAppError(err);
      if (!appErr || appErr.status >= 500 || appErr.status === 429 || appErr.status === 401) {
        await ctx.reads.delete(COLLECTION, id);
        throw err;
      }
      rendered = renderError(appErr);
    }
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
