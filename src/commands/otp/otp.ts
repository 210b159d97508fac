/**
 * One-time passwords (`otp-<svcId>-<number>`). Only a slow salted hash of a code is stored. A code is
 * single-use, expires after its TTL, is void after too many wrong tries, and a new code replaces the
 * previous one; a number gets a limited number of codes per 15 minutes.
 */
import type { Decider, DomainEvent } from '../decider.js';
import { AppError, conflict, invalid } from '../../domain/errors.js';

export const SEND_WINDOW_MS = 15 * 60 * 1000;

type Ids = { svcId: number; number: string; time: number };

export type OtpEvent =
  | DomainEvent<'OtpIssued', Ids & { hash: string; keyword: string; expiresAt: number; smsId: string }>
  | DomainEvent<'OtpAttemptFailed', Ids & { wrong: number }>
  | DomainEvent<'OtpVoided', Ids & { reason: 'attempts' }>
  | DomainEvent<'OtpVerified', Ids & { purpose: 'validate' | 'click2call' }>;

export interface OtpState {
  current: { hash: string; expiresAt: number; wrong: number; spent: boolean; void: boolean } | null;
  /** When codes were issued (the send limit looks at the last 15 minutes). */
  sends: number[];
}

export type OtpCommand =
  | { type: 'Issue'; svcId: number; number: string; hash: string; keyword: string; smsId: string; time: number; ttlMs: number; maxSends: number }
  /** `hash` is the code hash `matches` was computed against: a newer code means decide again. */
  | { type: 'Verify'; svcId: number; number: string; hash: string | null; matches: boolean; time: number; maxAttempts: number; purpose: 'validate' | 'click2call' };

/** Seconds until another code may be sent, or 0 when one may be sent now. */
export function sendRetryAfter(s: OtpState, now: number, maxSends: number): number {
  const recent = s.sends.filter((t) => t > now - SEND_WINDOW_MS).sort((a, b) => a - b);
  if (recent.length < maxSends) return 0;
  return Math.max(1, Math.ceil((recent[recent.length - maxSends]! + SEND_WINDOW_MS - now) / 1000));
}

export const otpDecider: Decider<OtpCommand, OtpState, OtpEvent> = {
  initialState: () => ({ current: null, sends: [] }),
  evolve(s, e) {
    switch (e.type) {
      case 'OtpIssued':
        return {
          current: { hash: e.data.hash, expiresAt: e.data.expiresAt, wrong: 0, spent: false, void: false },
          // Only the window matters; older sends are dropped as the stream is folded.
          sends: [...s.sends.filter((t) => t > e.data.time - SEND_WINDOW_MS), e.data.time],
        };
      case 'OtpAttemptFailed':
        return s.current ? { ...s, current: { ...s.current, wrong: e.data.wrong } } : s;
      case 'OtpVoided':
        return s.current ? { ...s, current: { ...s.current, void: true } } : s;
      case 'OtpVerified':
        return s.current ? { ...s, current: { ...s.current, spent: true } } : s;
    }
  },
  decide(c, s) {
    const ids = { svcId: c.svcId, number: c.number, time: c.time };
    if (c.type === 'Issue') {
      const wait = sendRetryAfter(s, c.time, c.maxSends);
      if (wait > 0) throw new AppError('RATE_LIMITED', `number ${c.number} got ${c.maxSends} codes in 15 minutes; try again later`, { 'retry-after': String(wait) });
      return [{ type: 'OtpIssued', data: { ...ids, hash: c.hash, keyword: c.keyword, expiresAt: c.time + c.ttlMs, smsId: c.smsId } }];
    }
    const cur = s.current;
    if (!cur || cur.spent) throw invalid('otp is not valid for this number; request a new code');
    if (cur.hash !== c.hash) throw conflict('a newer code was issued meanwhile');
    if (cur.void) throw invalid('otp is void after too many wrong tries; request a new code');
    if (c.time > cur.expiresAt) throw invalid('otp has expired; request a new code');
    if (c.matches) return [{ type: 'OtpVerified', data: { ...ids, purpose: c.purpose } }];
    const wrong = cur.wrong + 1;
    const events: OtpEvent[] = [{ type: 'OtpAttemptFailed', data: { ...ids, wrong } }];
    if (wrong >= c.maxAttempts) events.push({ type: 'OtpVoided', data: { ...ids, reason: 'attempts' } });
    return events;
  },
};
