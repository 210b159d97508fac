/** Scheduling an outbound call for later (POST /calls with schedule-time). */
import { handleCommand } from '../decider.js';
import { scheduleDecider, type CallScheduledData } from './schedule.js';
import { streams } from '../../domain/streams.js';
import { conflict, invalid } from '../../domain/errors.js';
import { doNotCallMessage } from '../../domain/do-not-call.js';
import type { Context } from '../../context.js';
import { getService } from '../../queries/services.js';
import { doNotCall } from '../../queries/compliance.js';

/** Checks the skill and the number, records the schedule `request.id` and waits until the read models show it. */
export async function scheduleCall(ctx: Context, request: Omit<CallScheduledData, 'time'>): Promise<void> {
  const { svcId, skillId, number } = request;
  if (skillId !== null) {
    const service = await getService(ctx, svcId);
    if (!service?.skills.some((k) => k.id === skillId)) throw invalid(`skill-id ${skillId} is not a skill of service ${svcId}`);
  }
  // CONTRACT section 15: a scheduled call to a dnd or blocked number is refused when requested.
  const dnc = await doNotCall(ctx, svcId, number);
  if (dnc) throw conflict(`${doNotCallMessage(number, dnc)}: a call to it cannot be scheduled`);
  const data: CallScheduledData = { ...request, time: ctx.now() };
  const r = await handleCommand(ctx.events, streams.schedule(data.id), scheduleDecider, { type: 'Schedule', data });
  await ctx.sync.waitFor(r.position);
}
