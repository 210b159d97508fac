/**
 * Features that need a media server (whisper, spy, barge, adding a leg, the operator's simulated
 * parties) are refused on a switch that mixes no media: the SIP switch is a B2BUA that only passes
 * each party's SDP to the other (CONTRACT section 16). One check for every such route, so a new
 * media feature is refused by calling it.
 */
import type { Context } from '../context.js';
import { conflict } from '../domain/errors.js';

export function needsMedia(ctx: Context, feature: string): void {
  if (ctx.config.switch?.kind === 'sip') throw conflict(`${feature} needs a media server: the SIP switch does not mix media`);
}
