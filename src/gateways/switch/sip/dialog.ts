/**
 * Dialogs (RFC 3261 section 12): what a leg's requests carry once it is established, and where
 * they go (its route set, else its remote target).
 */
import { randomBase64url } from './random-ids.js';
import { header, headerValues, parseNameAddr, parseUri, tagOf, type SipRequest, type SipResponse } from './message.js';
import type { Peer, TransportName } from './transport.js';

export interface Dialog {
  sipCallId: string;
  localTag: string;
  remoteTag: string | null;
  /** From (ours) and To (theirs) as sent on the INVITE, without tags. */
  local: string;
  remote: string;
  /** Request-URI of requests in the dialog: the peer's Contact. */
  remoteTarget: string;
  /** Route headers of requests in the dialog, in order. */
  routeSet: string[];
  localSeq: number;
  /** Where requests go when the route set and target name no better place: the address the peer spoke from. */
  flow: Peer;
  /** Requests follow `flow` (symmetric signalling, RFC 3581): the peer is behind NAT or an SBC. */
  sticky: boolean;
}

export const newCallId = (host: string) => `${randomBase64url(12)}@${host}`;

export const dialogKey = (sipCallId: string, localTag: string) => `${sipCallId}|${localTag}`;

/** Learns the peer's tag, target and route set from a 2xx (or 1xx with a tag) to our INVITE (RFC 3261 12.1.2). */
export function learnFromResponse(d: Dialog, res: SipResponse): void {
  d.remoteTag = tagOf(header(res, 'to')) ?? d.remoteTag;
  const contact = parseNameAddr(headerValues(res, 'contact')[0] ?? '');
  if (contact) d.remoteTarget = contact.uri;
  const rr = headerValues(res, 'record-route');
  if (rr.length > 0) d.routeSet = rr.reverse();
}

/** The dialog a UAS forms from an INVITE it answers (RFC 3261 12.1.1). */
export function dialogFromRequest(req: SipRequest, localTag: string, source: Peer): Dialog {
  const contact = parseNameAddr(headerValues(req, 'contact')[0] ?? '');
  return {
    sipCallId: header(req, 'call-id')!,
    localTag,
    remoteTag: tagOf(header(req, 'from')),
    local: stripTag(header(req, 'to')!),
    remote: stripTag(header(req, 'from')!),
    remoteTarget: contact?.uri ?? parseNameAddr(header(req, 'from')!)!.uri,
    routeSet: headerValues(req, 'record-route'),
    localSeq: Math.floor(Math.random() * 10_000) + 1,
    flow: source,
    sticky: true,
  };
}

const stripTag = (v: string) => v.replace(/;\s*tag=[^;>]*/i, '');

/** A request inside the dialog; the CSeq rises except for ACK and CANCEL, which take `seq`. */
export function inDialog(d: Dialog, method: string, contact: string, body = '', seq?: number): SipRequest {
  const cseq = seq ?? ++d.localSeq;
  const headers: Array<[string, string]> = [
    ['max-forwards', '70'],
    ['from', `${d.local};tag=${d.localTag}`],
    ['to', d.remoteTag ? `${d.remote};tag=${d.remoteTag}` : d.remote],
    ['call-id', d.sipCallId],
    ['cseq', `${cseq} ${method}`],
    ...d.routeSet.map((r): [string, string] => ['route', r]),
  ];
  if (method === 'INVITE') headers.push(['contact', contact], ['allow', ALLOW]);
  if (body) headers.push(['content-type', 'application/sdp']);
  return { kind: 'request', method, uri: d.remoteTarget, headers, body };
}

export const ALLOW = 'INVITE, ACK, CANCEL, BYE, OPTIONS, REGISTER, INFO';

/** Where a request of the dialog goes: its flow when sticky, else the first route, else the target. */
export function destination(d: Dialog): Peer {
  if (d.sticky) return d.flow;
  const first = d.routeSet[0] ? parseNameAddr(d.routeSet[0])?.uri : d.remoteTarget;
  const uri = first ? parseUri(first) : null;
  if (!uri) return d.flow;
  const transport = (uri.params.get('transport')?.toLowerCase() as TransportName | undefined) ?? d.flow.transport;
  return { transport: transport === 'tcp' ? 'tcp' : 'udp', host: uri.host, port: uri.port ?? 5060 };
}

/** Where a SIP URI is reached: its host and port (5060), over its transport parameter or the given one. */
export function peerOf(uri: string, dflt: Peer['transport']): Peer | null {
  const u = parseUri(uri);
  if (!u) return null;
  const t = u.params.get('transport')?.toLowerCase();
  return { transport: t === 'tcp' ? 'tcp' : t === 'udp' ? 'udp' : dflt, host: u.host, port: u.port ?? 5060 };
}

export const hostPart = (h: string) => (h.includes(':') ? `[${h}]` : h);
