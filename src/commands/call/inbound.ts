/**
 * A caller reaching a DID: the `CallStarted` of an inbound call (CONTRACT sections 5 and 16). One
 * module for the operator's simulated inbound calls and the SIP switch's real ones.
 */
import type { Context } from '../../context.js';
import { handleCommand } from '../decider.js';
import { callDecider, type CallStartedData } from './call.js';
import { streams } from '../../domain/streams.js';
import { normalizePhone } from '../../domain/phone.js';
import { dayOf } from '../../domain/time.js';
import type { ServiceDoc } from '../../projections/services.js';
import { newCallId } from './place.js';
import { queueForDigits } from '../../domain/routing.js';
import { customerPriority } from '../../queries/customers.js';

export interface InboundCall {
  did: string;
  from: string;
  /** IVR digits, "" when none. */
  ivr: string;
}

/** The service that has the DID, or null. */
export async function serviceOfDid(ctx: Context, did: string): Promise<ServiceDoc | null> {
  // Services are few; a scan keeps DIDs without a second read model.
  const services = await ctx.reads.find<ServiceDoc>('services');
  return services.find((s) => s.dids.some((d) => normalizePhone(d) === normalizePhone(did))) ?? null;
}

/** Whether the caller is on the service's blocked list (rejected, counted as spam). */
export const isBlocked = (service: ServiceDoc, from: string): boolean => service.blocked.some((b) => normalizePhone(b) === normalizePhone(from));

/** Starts the inbound call (`xnid` chosen by the caller, so a switch can bind its caller first); its log position. */
export async function startInbound(ctx: Context, service: ServiceDoc, c: InboundCall, xnid: string = newCallId()): Promise<{ xnid: string; position: number }> {
  const time = ctx.now();
  const blocked = isBlocked(service, c.from);
  // The queue and the caller's priority go with the call's first event (CONTRACT section 17).
  const priority = blocked ? 0 : await customerPriority(ctx, service.svcId, c.from);
  const data: CallStartedData = {
    xnid,
    svcId: service.svcId,
    direction: 'Inbound',
    origin: 'inbound',
    customerNumber: c.from,
    did: c.did,
    data: c.ivr,
    recording: true,
    timezone: service.timezone,
    day: dayOf(time, service.timezone),
    agentFirst: false,
    namedAgentId: null,
    skillId: null,
    msgToAgent: '',
    countryCode: '',
    userId: null,
    blocked,
    wrapUp: false,
    queueId: blocked ? null : (queueForDigits(service.queues, c.ivr)?.id ?? null),
    ...(priority ? { priority } : {}),
    source: null,
    time,
  };
  const r = await handleCommand(ctx.events, streams.call(xnid), callDecider, { type: 'Start', data });
  return { xnid, position: r.position };
}
