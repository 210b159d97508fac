/** A user's own changes: profile and password (POST /user, POST /user-password). */
import { handleCommand } from '../decider.js';
import { userDecider, type UserCommand } from './user.js';
import { streams } from '../../domain/streams.js';
import type { Context } from '../../context.js';

/** Runs a command on user `userId` and waits until the read models show it. */
export async function runUserCommand(ctx: Context, userId: number, command: UserCommand) {
  const result = await handleCommand(ctx.events, streams.user(userId), userDecider, command);
  await ctx.sync.waitFor(result.position);
  return result;
}
