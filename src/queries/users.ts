/** Reads of the users read model. */
import type { Context } from '../context.js';
import type { UserDoc } from '../projections/users.js';

/** User `userId`'s document, null when there is no such user. */
export const getUser = (ctx: Context, userId: number): Promise<UserDoc | null> => ctx.reads.get<UserDoc>('users', String(userId));
