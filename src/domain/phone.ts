/** Phone numbers: 6 to 15 digits with an optional leading + (CONTRACT section 8). */
export const PHONE_RE = /^\+?\d{6,15}$/;

/** Digits only, for comparing numbers given with and without +. */
export function normalizePhone(s: string): string {
  return s.startsWith('+') ? s.slice(1) : s;
}

