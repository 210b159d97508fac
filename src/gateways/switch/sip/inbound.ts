/**
 * Requests that reach the SIP switch (CONTRACT section 16): inside a dialog (BYE, re-INVITE,
 * INFO, OPTIONS), or outside one: OPTIONS answered 200, an INVITE to a DID offered to the platform
 * (the only thing an outside INVITE can reach: no open relay), CANCEL of such an INVITE, and 481
 * for requests naming a dialog that does not exist.
 */
import { header, parseUri, tagOf, userOf, type SipRequest } from './message.js';
import { newTag, type ServerTx } from './transactions.js';
import { dialogFromRequest, dialogKey, ALLOW } from './dialog.js';
import { isSdp } from './sdp.js';
import { onReinvite } from './reinvite.js';
import type { Leg } from './leg.js';
import type { SwitchCore } from './switch-core.js';

/** Calls one source address may have offered and not yet ended: a flood from one place cannot take every agent. */
export const MAX_INBOUND_PER_ADDRESS = 100;
const KEYPAD = /^[0-9*#]{0,32}$/;

export function handleRequest(sw: SwitchCore, req: SipRequest, tx: ServerTx): void {
  const mf = header(req, 'max-forwards');
  if (mf !== undefined && /^\s*0+\s*$/.test(mf) && req.method !== 'OPTIONS') return tx.respond(sw.response(tx, 483, 'Too Many Hops'));
  if (req.method === 'CANCEL') return cancel(sw, req, tx);
  const toTag = tagOf(header(req, 'to'));
  if (toTag) {
    const leg = sw.dialogs.get(dialogKey(header(req, 'call-id')!, toTag));
    if (!leg || leg.state === 'ending') return tx.respond(sw.response(tx, 481, 'Call/Transaction Does Not Exist'));
    return inDialog(sw, leg, req, tx);
  }
  switch (req.method) {
    case 'OPTIONS':
      return tx.respond(sw.response(tx, 200, 'OK', [['allow', ALLOW], ['accept', 'application/sdp']], '', newTag()));
    case 'INVITE':
      return void invite(sw, req, tx);
    case 'REGISTER':
      if (!sw.registrar) return tx.respond(sw.response(tx, 501, 'Not Implemented', [['allow', ALLOW]]));
      return void sw.registrar.register(req, tx).catch(() => tx.respond(sw.response(tx, 500, 'Server Internal Error', [], '', newTag())));
    case 'BYE':
    case 'INFO':
    case 'UPDATE':
    case 'PRACK':
      return tx.respond(sw.response(tx, 481, 'Call/Transaction Does Not Exist'));
    default:
      return tx.respond(sw.response(tx, 501, 'Not Implemented', [['allow', ALLOW]]));
  }
}

function inDialog(sw: SwitchCore, leg: Leg, req: SipRequest, tx: ServerTx) {
  const tag = leg.dialog.localTag;
  switch (req.method) {
    case 'BYE':
      tx.respond(sw.response(tx, 200, 'OK', [], '', tag));
      return sw.end(leg, 'hangup');
    case 'INVITE':
      return onReinvite(sw, leg, req, tx);
    case 'OPTIONS':
    case 'INFO':
      return tx.respond(sw.response(tx, 200, 'OK', [], '', tag));
    default:
      return tx.respond(sw.response(tx, 501, 'Not Implemented', [['allow', ALLOW]], '', tag));
  }
}

/** CANCEL of an inbound INVITE not answered yet: 200 to it, 487 to the INVITE (RFC 3261 9.2). */
function cancel(sw: SwitchCore, req: SipRequest, tx: ServerTx) {
  const branch = /;\s*branch=([^;,\s]+)/i.exec(header(req, 'via') ?? '')?.[1];
  const callId = header(req, 'call-id');
  const offered = (l: Leg) => l.offer && l.state === 'offered' && header(l.offer.tx.request, 'call-id') === callId && header(l.offer.tx.request, 'via')?.includes(`branch=${branch}`);
  const leg = [...sw.pendingInbound.values(), ...sw.legs.values(), ...waiting.get(sw)?.values() ?? []].find(offered);
  if (!leg || !leg.offer) return tx.respond(sw.response(tx, 481, 'Call/Transaction Does Not Exist'));
  tx.respond(sw.response(tx, 200, 'OK', [], '', leg.dialog.localTag));
  leg.offer.tx.respond(sw.response(leg.offer.tx, 487, 'Request Terminated', [], '', leg.dialog.localTag));
  leg.offer.cancelled = true;
  if (sw.legs.get(leg.legId) === leg) sw.end(leg, 'hangup');
}

/** INVITEs waiting for the platform's decision (CANCEL can reach them too). */
const waiting = new WeakMap<SwitchCore, Set<Leg>>();

async function invite(sw: SwitchCore, req: SipRequest, tx: ServerTx) {
  const tag = newTag();
  const did = parseUri(req.uri)?.user ?? null;
  if (!did || !sw.inboundHandler || sw.isClosed) return tx.respond(sw.response(tx, did ? 503 : 404, did ? 'Service Unavailable' : 'Not Found', [], '', tag));
  const source = tx.source.host;
  let open = 0;
  for (const l of [...sw.legs.values(), ...sw.pendingInbound.values(), ...(waiting.get(sw) ?? [])]) if (l.direction === 'in' && l.dialog.flow?.host === source) open++;
  if (open >= MAX_INBOUND_PER_ADDRESS) return tx.respond(sw.response(tx, 503, 'Service Unavailable', [['retry-after', '30']], '', tag));
  const from = callerOf(req);
  const ivr = header(req, 'x-ivr-data')?.trim() ?? '';
  const dialog = dialogFromRequest(req, tag, tx.source);
  const leg = sw.newLeg('', '', 'customer', 'in', 'offered', dialog);
  leg.remoteSdp = isSdp(req.body) ? req.body : null;
  leg.offer = { tx, blocked: false, cancelled: false };
  const set = waiting.get(sw) ?? new Set<Leg>();
  waiting.set(sw, set);
  set.add(leg);
  let decision;
  const bind = (callId: string, blocked: boolean) => {
    leg.callId = callId;
    leg.offer!.blocked = blocked;
    sw.pendingInbound.set(callId, leg);
  };
  try {
    decision = await sw.inboundHandler({ did, from, data: KEYPAD.test(ivr) ? ivr : '', bind });
  } catch {
    decision = null;
  } finally {
    set.delete(leg);
  }
  if (decision === 'accepted' || sw.isClosed) return;
  if (sw.pendingInbound.get(leg.callId) === leg) sw.pendingInbound.delete(leg.callId);
  sw.dialogs.delete(dialogKey(dialog.sipCallId, tag));
  if (!leg.offer.cancelled) tx.respond(sw.response(tx, decision ? 404 : 500, decision ? 'Not Found' : 'Server Internal Error', [], '', tag));
}

/** The caller's number: P-Asserted-Identity's user part when present, else From's (CONTRACT 16). */
function callerOf(req: SipRequest): string {
  const raw = userOf(header(req, 'p-asserted-identity')) ?? userOf(header(req, 'from')) ?? '';
  const digits = raw.replace(/[\s().-]/g, '');
  return /^\+?[0-9]{1,20}$/.test(digits) ? digits : 'anonymous';
}
