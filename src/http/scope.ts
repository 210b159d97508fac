/** Tenant scope (CONTRACT section 4): a service must be one of the user's. */
import { forbidden, invalid } from '../domain/errors.js';
import type { AuthUser } from '../domain/auth-user.js';

/** The service a request acts on: the given id if the user holds it, else the user's first service. */
export function scopeService(user: AuthUser, svcId: number | undefined, name = 'svc-id', required = false): number {
  if (svcId === undefined) {
    if (required) throw invalid(`${name} is required`);
    const first = user.services[0];
    if (first === undefined) throw forbidden('no service is assigned to these credentials');
    return first;
  }
  if (!user.services.includes(svcId)) throw forbidden(`service ${svcId} is not assigned to these credentials`);
  return svcId;
}
