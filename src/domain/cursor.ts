/**
 * Resume cursors of the live event streams (CONTRACT sections 13 and 14): opaque to clients, they
 * name a position in the global log and the service they were given on. A cursor presented on
 * another service, or one that does not decode, is refused.
 *
 * Form: base64url of `<svcId>.<position>` (no padding). Clients must not rely on it.
 */

export function encodeCursor(svcId: number, position: number): string {
  return Buffer.from(`${svcId}.${position}`, 'utf8').toString('base64url');
}

/** The position a cursor names, or null when it is not a cursor of this service. */
export function decodeCursor(svcId: number, cursor: string): number | null {
  if (cursor.length === 0 || cursor.length > 64 || !/^[A-Za-z0-9_-]+$/.test(cursor)) return null;
  const m = /^(\d{1,15})\.(\d{1,15})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!m || Number(m[1]) !== svcId) return null;
  // Re-encoding must give the same text, so each position has exactly one cursor.
  if (encodeCursor(svcId, Number(m[2])) !== cursor) return null;
  return Number(m[2]);
}
