/** The operator's bearer token check: constant time, on digests (neither content nor length leaks). */
import { createHash, timingSafeEqual } from 'node:crypto';
import { AppError } from '../../domain/errors.js';

export function operatorTokenCheck(token: string): (authorization: string | undefined) => void {
  const expected = createHash('sha256').update(token).digest();
  return (authorization) => {
    const h = authorization ?? '';
    const presented = h.startsWith('Bearer ') ? h.slice(7).trim() : '';
    const ok = presented.length > 0 && timingSafeEqual(createHash('sha256').update(presented).digest(), expected);
    if (!ok) throw new AppError('UNAUTHORIZED', 'operator bearer token required', { 'WWW-Authenticate': 'Bearer realm="telephony-ops"' });
  };
}
