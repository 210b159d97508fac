/**
 * A caller the switch itself received (SIP, CONTRACT 16): the DID picks the service; the caller
 * becomes an inbound call as the operator's simulated ones do (commands/call/inbound.ts), bound to
 * the switch's leg before the call starts, so the worker's acceptInbound finds it.
 */
import type { Context } from '../../context.js';
import type { InboundDecision, InboundOffer } from '../../gateways/switch/port.js';
import { isBlocked, serviceOfDid, startInbound } from '../../commands/call/inbound.js';
import { newCallId } from '../../commands/call/place.js';

export async function inboundCaller(ctx: Context, offer: InboundOffer): Promise<InboundDecision> {
  const service = await serviceOfDid(ctx, offer.did);
  if (!service) return 'unknown';
  const xnid = newCallId();
  offer.bind(xnid, isBlocked(service, offer.from));
  await startInbound(ctx, service, { did: offer.did, from: offer.from, ivr: offer.data }, xnid);
  return 'accepted';
}
