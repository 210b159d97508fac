/**
 * What the dialer, the scheduler and the scheduling route ask before a call the platform places on
 * its own (CONTRACT section 15): may this number be dialled, and when is the service's next opening.
 */
import type { Context } from '../context.js';
import { nextOpening } from '../domain/calling-hours.js';
import { doNotCallReason, numberSpellings, type DoNotCallReason } from '../domain/do-not-call.js';
import { customerKey, type CustomerDoc } from '../projections/customers.js';
import type { ServiceDoc } from '../projections/services.js';

/** Whether any provisioned spelling of the number is marked dnd in the service. */
async function isDnd(ctx: Context, svcId: number, number: string): Promise<boolean> {
  for (const n of numberSpellings(number)) {
    if ((await ctx.reads.get<CustomerDoc>('customers', customerKey(svcId, n)))?.dnd) return true;
  }
  return false;
}

/** Why the number must not be dialled for the service (dnd, then blocked), or null. */
export async function doNotCall(ctx: Context, svcId: number, number: string, service?: ServiceDoc | null): Promise<DoNotCallReason | null> {
  const svc = service === undefined ? await ctx.reads.get<ServiceDoc>('services', String(svcId)) : service;
  return doNotCallReason(svc?.blocked ?? [], await isDnd(ctx, svcId, number), number);
}

/** When a call of the service may be placed, at `at` or later: `at` itself inside its calling hours (or with none). */
export function callableFrom(service: Pick<ServiceDoc, 'callingHours' | 'timezone'> | null, at: number): number {
  return service ? nextOpening(service.callingHours, service.timezone, at) : at;
}
