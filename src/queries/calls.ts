/** Reading calls: tenant-checked lookup and the spec's call summary item. */
import type { Context } from '../context.js';
import type { AuthUser } from '../domain/auth-user.js';
import type { CallDoc, MeteringDoc } from '../projections/calls.js';
import { notFound } from '../domain/errors.js';
import { summaryTime } from '../domain/time.js';

/** How long a recording URL handed out in a read stays valid. */
export const READ_RECORDING_TTL_MS = 24 * 3600 * 1000;

/** Call `xnid`'s document (no tenant check: for the operator and signed URLs), null when unknown. */
export const getCall = (ctx: Context, xnid: string): Promise<CallDoc | null> => ctx.reads.get<CallDoc>('calls', xnid);

/** Service `svcId`'s call counts, null before its first call. */
export const meteringOf = (ctx: Context, svcId: number): Promise<MeteringDoc | null> => ctx.reads.get<MeteringDoc>('metering', String(svcId));

/**
 * A call the user may act on. Another tenant's call is answered exactly like an unknown one (404,
 * same message), so a stranger cannot learn that a call id exists.
 */
export async function callFor(ctx: Context, user: AuthUser, xnid: string): Promise<CallDoc> {
  const doc = await ctx.reads.get<CallDoc>('calls', xnid);
  if (!doc || !user.services.includes(doc.svcId)) throw notFound(`call ${xnid} not found`);
  return doc;
}

export function callSummary(ctx: Context, c: CallDoc) {
  const disposition = c.disposition ?? (c.agentId !== null ? 'answered' : 'missed');
  return {
    duration: String(c.durationS),
    receivedBy: c.agentName,
    note: '',
    disposition: disposition.toUpperCase(),
    xnid: c.xnid,
    recording: c.recording ? ctx.signer.url(c.xnid, ctx.now() + READ_RECORDING_TTL_MS) : null,
    time: summaryTime(c.startTime ?? c.requestedAt, c.timezone),
    callType: c.direction.toUpperCase(),
    ivrData: c.data,
    ...(c.callback ? { callback: true } : {}),
    ...(c.callbackOf ? { 'callback-of': c.callbackOf } : {}),
  };
}

/** Summaries of the given calls of one service, in the order asked; others' and unknown ids are left out. */
export async function summaries(ctx: Context, svcId: number, xnids: string[]) {
  const out = [];
  for (const xnid of xnids) {
    const doc = await ctx.reads.get<CallDoc>('calls', xnid.toLowerCase());
    if (doc && doc.svcId === svcId) out.push(callSummary(ctx, doc));
  }
  return out;
}
