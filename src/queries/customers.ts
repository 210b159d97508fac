/** Reads of the customers read model that commands and workers share. */
import type { Context } from '../context.js';
import { normalizePhone } from '../domain/phone.js';
import { customerKey, type CustomerDoc } from '../projections/customers.js';

/** The caller's customer priority (CONTRACT section 17), 0 for a number that is no provisioned customer. */
export async function customerPriority(ctx: Context, svcId: number, number: string): Promise<number> {
  const doc =
    (await ctx.reads.get<CustomerDoc>('customers', customerKey(svcId, number))) ??
    (number !== normalizePhone(number) ? await ctx.reads.get<CustomerDoc>('customers', customerKey(svcId, normalizePhone(number))) : null);
  return typeof doc?.priority === 'number' ? doc.priority : 0;
}

/** Service `svcId`'s customer with this number as given, else as normalised; null when none. */
export async function customerByNumber(ctx: Context, svcId: number, number: string): Promise<CustomerDoc | null> {
  return (
    (await ctx.reads.get<CustomerDoc>('customers', customerKey(svcId, number))) ??
    (await ctx.reads.get<CustomerDoc>('customers', customerKey(svcId, normalizePhone(number))))
  );
}
