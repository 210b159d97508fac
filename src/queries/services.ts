/** Reads of the services read model. */
import type { Context } from '../context.js';
import type { ServiceDoc } from '../projections/services.js';

/** Service `svcId`'s document, null when there is no such service. */
export const getService = (ctx: Context, svcId: number): Promise<ServiceDoc | null> => ctx.reads.get<ServiceDoc>('services', String(svcId));
