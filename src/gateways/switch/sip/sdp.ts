/**
 * The little SDP (RFC 4566) a back-to-back user agent without media needs: a hold description
 * (`a=inactive`) that answers a party's offer line for line, and a party's description relayed to
 * the other party under the platform's own origin line (RFC 3264 8: one origin per session, its
 * version raised on every change).
 */

export interface Origin {
  sessionId: string;
  version: number;
  address: string;
}

const ipKind = (address: string) => (address.includes(':') ? 'IP6' : 'IP4');

const lines = (sdp: string) => sdp.split(/\r?\n/).filter((l) => l.length > 0);

/** A description is usable when it has a version line and at least one media line. */
export function isSdp(body: string): boolean {
  const l = lines(body);
  return l[0] === 'v=0' && l.some((x) => x.startsWith('m='));
}

/**
 * A hold description: every media line of `offer` answered on port 9 with its first format and
 * `a=inactive`; with no offer, an audio offer (PCMU, PCMA, telephone-event) on hold.
 */
export function holdSdp(origin: Origin, offer: string | null): string {
  const out = ['v=0', `o=ct ${origin.sessionId} ${origin.version} IN ${ipKind(origin.address)} ${origin.address}`, 's=-', `c=IN ${ipKind(origin.address)} ${origin.address}`, 't=0 0'];
  const media = offer ? lines(offer).filter((l) => l.startsWith('m=')) : [];
  if (media.length === 0) {
    out.push('m=audio 9 RTP/AVP 0 8 101', 'a=rtpmap:0 PCMU/8000', 'a=rtpmap:8 PCMA/8000', 'a=rtpmap:101 telephone-event/8000', 'a=inactive');
  } else {
    for (const m of media) {
      const [kind, port, proto, first] = m.slice(2).split(' ');
      // A media line refused in the offer (port 0) stays refused; the others are answered on hold.
      out.push(port === '0' ? `m=${kind} 0 ${proto} ${first}` : `m=${kind} 9 ${proto} ${first}`, 'a=inactive');
    }
  }
  return out.join('\r\n') + '\r\n';
}

/** `sdp` (the other party's media) under the platform's origin line for this party's session. */
export function relaySdp(origin: Origin, sdp: string): string {
  const body = lines(sdp).map((l) => (l.startsWith('o=') ? `o=ct ${origin.sessionId} ${origin.version} IN ${ipKind(origin.address)} ${origin.address}` : l));
  return body.join('\r\n') + '\r\n';
}

/** The audio connection address, port and formats of a description (tests and logs). */
export function audioOf(sdp: string): { address: string | null; port: number; formats: string[] } | null {
  let address: string | null = null;
  let audio: { address: string | null; port: number; formats: string[] } | null = null;
  for (const l of lines(sdp)) {
    if (l.startsWith('c=')) {
      const a = l.split(' ')[2] ?? null;
      if (audio) audio.address = a;
      else address = a;
    } else if (l.startsWith('m=')) {
      if (audio) break;
      const [kind, port, , ...formats] = l.slice(2).split(' ');
      if (kind === 'audio') audio = { address, port: Number(port), formats };
    }
  }
  return audio;
}
