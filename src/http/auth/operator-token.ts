/** The operator's bearer token check: constant time, on digests (neither content nor length leaks). */
import { createHash, timingSafeEqual } from 'node:crypto';
import { AppError } from '../../domain/errors.js';
import type { AuthFailureLimiter } from './limits.js';

export function operatorTokenCheck(token: string): (authorization: string | undefined) => void {
  const expected = createHash('sha256').update(token).digest();
  return (authorization) => {
    const h = authorization ?? '';
    const presented = h.startsWith('Bearer ') ? h.slice(7).trim() : '';
    const ok = presented.length > 0 && timingSafeEqual(createHash('sha256').update(presented).digest(), expected);
    if (!ok) throw new AppError('UNAUTHORIZED', 'operator bearer token required', { 'WWW-Authenticate': 'Bearer realm="telephony-ops"' });
  };
}

/**
 * The token check behind the failure limits (./limits.ts): an address over them is refused before
 * its token is compared; a token presented and wrong counts as a failure of that address.
 */
export function operatorGuard(token: string, failures: AuthFailureLimiter): (req: { headers: { authorization?: string }; ip: string }) => void {
  const check = operatorTokenCheck(token);
  return (req) => {
    const refused = failures.refusal('op', req.ip);
    if (refused) throw refused;
    try {
      check(req.headers.authorization);
    } catch (err) {
      if (req.headers.authorization) void failures.failed('op', req.ip);
      throw err;
    }
  };
}
