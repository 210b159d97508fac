/**
 * Resume cursors of the live event streams (CONTRACT sections 13 and 14): opaque to clients, they
 * name a position in the global log and the service they were given on, and only the server can
 * make one. A position is used only when it came from the server: on KurrentDB a read from a
 * position that is not an event boundary fails, so a forged position must never reach `readAll`
 * or `subscribeToAll`. Hence each cursor carries an HMAC of its service and position under a key
 * every process of a deployment shares (derived from the platform key in the event store, as the
 * recording URLs' is); a cursor of another service, another deployment, or a made-up one fails it.
 *
 * Form: `<position in base 36>.<first 16 bytes of the HMAC, base64url>`. Clients must not rely on it.
 * Cursors of the earlier, unsigned form (base64url of `<svc>.<position>`) are refused like any
 * forged one: the server cannot tell a given one from a made-up one.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

const MAC_BYTES = 16;

export class CursorCodec {
  private readonly key: Buffer;

  /** `platformKey`: the deployment's shared secret; the cursors' own key is derived from it. */
  constructor(platformKey: Buffer) {
    this.key = createHmac('sha256', platformKey).update('live-event-cursors').digest();
  }

  private mac(svcId: number, position: number): Buffer {
    return createHmac('sha256', this.key).update(`${svcId}.${position}`).digest().subarray(0, MAC_BYTES);
  }

  encode(svcId: number, position: number): string {
    return `${position.toString(36)}.${this.mac(svcId, position).toString('base64url')}`;
  }

  /** The position a cursor names, or null when this server did not give it on this service. */
  decode(svcId: number, cursor: string): number | null {
    const m = /^([0-9a-z]{1,11})\.([A-Za-z0-9_-]{22})$/.exec(cursor);
    if (!m) return null;
    const position = parseInt(m[1]!, 36);
    if (!Number.isSafeInteger(position) || position < 1 || position.toString(36) !== m[1]) return null;
    const got = Buffer.from(m[2]!, 'base64url');
    if (got.length !== MAC_BYTES || got.toString('base64url') !== m[2] || !timingSafeEqual(got, this.mac(svcId, position))) return null;
    return position;
  }
}
