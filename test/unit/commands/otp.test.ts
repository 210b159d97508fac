/** The OTP decider: single use, expiry, wrong tries voiding the code, a newer code, the send limit. */
import { describe, expect, it } from 'vitest';
import { otpDecider, sendRetryAfter, SEND_WINDOW_MS, type OtpCommand, type OtpEvent } from '../../../src/commands/otp/otp.js';
import { deciderSpec } from '../../support/decider-spec.js';

const { given } = deciderSpec(otpDecider);
const ids = (time: number) => ({ svcId: 101, number: '9876543210', time });
const issue = (time: number, hash = 'h1'): OtpCommand => ({ type: 'Issue', ...ids(time), hash, keyword: 'login', smsId: `sms-${time}`, ttlMs: 300_000, maxSends: 3 });
const issued = (time: number, hash = 'h1'): OtpEvent => ({ type: 'OtpIssued', data: { ...ids(time), hash, keyword: 'login', expiresAt: time + 300_000, smsId: `sms-${time}` } });
const verify = (time: number, matches: boolean, hash: string | null = 'h1'): OtpCommand => ({ type: 'Verify', ...ids(time), hash, matches, maxAttempts: 3, purpose: 'validate' });

describe('otp decider', () => {
  it('issues a code that expires after its TTL; only its hash is stored', () => {
    const s = given().when(issue(1_000)).then(issued(1_000));
    expect(s.current).toEqual({ hash: 'h1', expiresAt: 301_000, wrong: 0, spent: false, void: false });
  });

  it('a right code verifies once; the code is spent after it', () => {
    const s = given(issued(1_000)).when(verify(2_000, true)).then({ type: 'OtpVerified', data: { ...ids(2_000), purpose: 'validate' } });
    expect(s.current?.spent).toBe(true);
    given(issued(1_000), { type: 'OtpVerified', data: { ...ids(2_000), purpose: 'click2call' } }).when(verify(3_000, true)).thenThrows('INVALID_PARAMETER', /not valid/);
  });

  it('wrong tries are counted and the last allowed one voids the code, after which even the right code fails', () => {
    const wrong1: OtpEvent = { type: 'OtpAttemptFailed', data: { ...ids(2_000), wrong: 1 } };
    const wrong2: OtpEvent = { type: 'OtpAttemptFailed', data: { ...ids(2_100), wrong: 2 } };
    given(issued(1_000)).when(verify(2_000, false)).then(wrong1);
    given(issued(1_000), wrong1).when(verify(2_100, false)).then(wrong2);
    const s = given(issued(1_000), wrong1, wrong2)
      .when(verify(2_200, false))
      .then({ type: 'OtpAttemptFailed', data: { ...ids(2_200), wrong: 3 } }, { type: 'OtpVoided', data: { ...ids(2_200), reason: 'attempts' } });
    expect(s.current?.void).toBe(true);
    given(issued(1_000), wrong1, wrong2, { type: 'OtpVoided', data: { ...ids(2_200), reason: 'attempts' } }).when(verify(2_300, true)).thenThrows('INVALID_PARAMETER', /void/);
  });

  it('an expired code, no code at all, and a code replaced meanwhile are refused', () => {
    given(issued(1_000)).when(verify(301_000, true)).thenMatches({ type: 'OtpVerified' });
    given(issued(1_000)).when(verify(301_001, true)).thenThrows('INVALID_PARAMETER', /expired/);
    given().when(verify(1, true, null)).thenThrows('INVALID_PARAMETER');
    // `matches` was computed against h1, but h2 replaced it: decide again, never verify the wrong code.
    given(issued(1_000), issued(1_500, 'h2')).when(verify(2_000, true, 'h1')).thenThrows('CONFLICT');
    given(issued(1_000), issued(1_500, 'h2')).when(verify(2_000, true, 'h2')).thenMatches({ type: 'OtpVerified' });
  });

  it('limits codes per number to maxSends in 15 minutes, with Retry-After in whole seconds', () => {
    const past = [issued(0), issued(60_000), issued(120_000)];
    const err = given(past).when(issue(180_000)).thenThrows('RATE_LIMITED');
    // The oldest of the three leaves the window at 15 minutes: 900 s after 0, 720 s after 180 s.
    expect(err.headers).toEqual({ 'retry-after': '720' });
    given(past).when(issue(SEND_WINDOW_MS + 1)).thenMatches({ type: 'OtpIssued' });
    expect(sendRetryAfter(given(past).state, SEND_WINDOW_MS - 500, 3)).toBe(1);
    // Folding drops sends that left the window.
    expect(given(past, issued(SEND_WINDOW_MS + 60_001)).state.sends).toEqual([120_000, SEND_WINDOW_MS + 60_001]);
  });
});
