/**
 * Re-INVITEs of a leg (RFC 3261 section 14): the platform's (a bridge passing the other party's
 * description) and the party's own (its media moved: passed on to the party it is bridged with).
 * Glare: a party's re-INVITE while ours is out is 491; ours answered 491 is tried again after a
 * random 2.1 to 4 s (RFC 3261 14.1).
 */
import type { SipRequest } from './message.js';
import type { ServerTx } from './transactions.js';
import { holdSdp, isSdp, relaySdp } from './sdp.js';
import type { Leg } from './leg.js';
import type { SwitchCore } from './switch-core.js';

const MAX_TRIES = 5;
/** How long a re-INVITE waits for one of the same leg still out (100 ms steps). */
const MAX_WAITS = 100;

/** A re-INVITE offering `sdp` (the other party's media); `then` runs once it is answered or given up. */
export function reinvite(sw: SwitchCore, leg: Leg, sdp: string | null, then?: () => void, tries = 0, waits = 0): void {
  if (!sdp || leg.state !== 'up' || sw.isClosed) return then?.();
  if (leg.reinviting) {
    if (waits >= MAX_WAITS) return then?.();
    return void setTimeout(() => reinvite(sw, leg, sdp, then, tries, waits + 1), 100).unref();
  }
  leg.reinviting = true;
  leg.origin.version++;
  const offer = relaySdp(leg.origin, sdp);
  const done = () => {
    leg.reinviting = false;
    then?.();
  };
  sw.sendInDialog(leg, 'INVITE', offer, (res) => {
    if (res.status < 200) return;
    if (res.status < 300) {
      leg.sentSdp = offer;
      if (isSdp(res.body)) leg.remoteSdp = res.body;
      sw.ack(leg, res, '');
      return done();
    }
    leg.reinviting = false;
    if (res.status === 491 && tries + 1 < MAX_TRIES) {
      setTimeout(() => reinvite(sw, leg, sdp, then, tries + 1, waits), 2100 + Math.random() * 1900).unref();
      return;
    }
    sw.options.log.warn({ status: res.status, legId: leg.legId }, 'sip re-INVITE refused: the parties keep their media');
    then?.();
  }, done);
}

/** A re-INVITE from the party: glare (491) while ours is out, else answered, and new media goes to the other party. */
export function onReinvite(sw: SwitchCore, leg: Leg, req: SipRequest, tx: ServerTx): void {
  const tag = leg.dialog.localTag;
  if (leg.reinviting) return tx.respond(sw.response(tx, 491, 'Request Pending', [], '', tag));
  const changed = isSdp(req.body) && req.body !== leg.remoteSdp;
  if (isSdp(req.body)) leg.remoteSdp = req.body;
  leg.sentSdp ??= holdSdp(leg.origin, leg.remoteSdp);
  tx.respond(sw.response(tx, 200, 'OK', [['contact', sw.contact], ['content-type', 'application/sdp']], leg.sentSdp, tag));
  const other = leg.bridgedWith ? sw.legs.get(leg.bridgedWith) : undefined;
  if (changed && other?.state === 'up') reinvite(sw, other, leg.remoteSdp);
}
