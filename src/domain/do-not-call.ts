/** Numbers the platform never dials on its own (CONTRACT section 15): a customer's `dnd`, the service's `blocked` list. */
import { normalizePhone } from './phone.js';

export type DoNotCallReason = 'dnd' | 'blocked';

/** Why `number` must not be dialled, or null. Numbers compare with and without a leading `+`. */
export function doNotCallReason(blocked: readonly string[], dnd: boolean, number: string): DoNotCallReason | null {
  if (dnd) return 'dnd';
  const n = normalizePhone(number);
  return blocked.some((b) => normalizePhone(b) === n) ? 'blocked' : null;
}

/** The ways one number may have been written: as given, without `+`, with `+`. */
export function numberSpellings(number: string): string[] {
  const n = normalizePhone(number);
  return [...new Set([number, n, `+${n}`])];
}

export const doNotCallMessage = (number: string, reason: DoNotCallReason) =>
  reason === 'dnd' ? `number ${number} asked not to be called (dnd)` : `number ${number} is on the service's blocked list`;
