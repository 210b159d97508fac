/**
 * Idempotency-Key (CONTRACT section 2): the first response to a key (per credentials) is kept for
 * 24 hours and returned again for the same key without doing anything again. A request still
 * running under the key makes a repeat wait for it. Client errors are kept like successes (the same
 * request fails the same way); server errors are not, so a retry after an outage runs again.
 */
import { createHash } from 'node:crypto';
import type { Context } from '../context.js';
import { AppError, invalid } from '../domain/errors.js';
import { body as errorBody, toAppError } from './errors.js';
import type { Rendered } from './route.js';

const TTL_MS = 24 * 60 * 60 * 1000;
const COLLECTION = 'idempotency';
const inFlight = new Map<string, Promise<Rendered>>();

export async function idempotent(ctx: Context, scope: string, key: string, run: () => Promise<Rendered>): Promise<Rendered> {
  if (key.length > 255) throw invalid('Idempotency-Key is longer than 255 characters');
  const id = createHash('sha256').update(scope).update('\u0000').update(key).digest('base64url');
  const running = inFlight.get(id);
  if (running) return running;
  // Registered before the first await, so a concurrent repeat joins this attempt instead of
  // racing it past the stored-response lookup.
  const attempt = (async () => {
    const stored = await ctx.reads.get<{ response: Rendered }>(COLLECTION, id);
    if (stored) return stored.response;
    let rendered: Rendered;
    try {
      rendered = await run();
    } catch (err) {
      const appErr = toAppError(err);
      if (!appErr || appErr.status >= 500 || appErr.status === 429 || appErr.status === 401) throw err;
      rendered = renderError(appErr);
    }
    if (rendered.status < 500) {
      await ctx.reads.put(COLLECTION, id, { response: rendered }, { expiresAt: ctx.now() + TTL_MS });
    }
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
