/** The SMS decider: one request, each try recorded once, sent or failed after the allowed tries. */
import { describe, expect, it } from 'vitest';
import { smsDecider, type SmsEvent, type SmsRequestedData } from '../../../src/commands/sms/sms.js';
import { deciderSpec } from '../../support/decider-spec.js';

const { given } = deciderSpec(smsDecider);
const data: SmsRequestedData = { id: 's1', svcId: 101, number: '9876543210', message: 'hello', countryCode: '91', callTxnId: null, tries: 2, otp: false, userId: 1, time: 1_000 };
const requested: SmsEvent = { type: 'SmsRequested', data };
const ids = (time: number) => ({ id: 's1', svcId: 101, time });
const attempt = (n: number, ok: boolean, time: number, error?: string) => ({ type: 'RecordAttempt' as const, attempt: n, ok, error, time });

describe('sms decider', () => {
  it('a request is recorded once (a retried request appends nothing)', () => {
    expect(given().when({ type: 'Request', data }).then(requested).status).toBe('pending');
    given(requested).when({ type: 'Request', data: { ...data, message: 'other' } }).thenNothingHappened();
  });

  it('a successful try sends it; the same try recorded again (a job run twice) changes nothing', () => {
    const sent: SmsEvent = { type: 'SmsSent', data: { ...ids(2_000), attempt: 1 } };
    expect(given(requested).when(attempt(1, true, 2_000)).then(sent)).toMatchObject({ status: 'sent', attempts: 1 });
    given(requested, sent).when(attempt(1, true, 2_001)).thenNothingHappened();
    given(requested, sent).when(attempt(2, false, 2_002, 'late')).thenNothingHappened();
  });

  it('a failed try leaves it pending while tries remain, and fails it on the last', () => {
    const first: SmsEvent = { type: 'SmsAttemptFailed', data: { ...ids(2_000), attempt: 1, error: 'gateway down' } };
    expect(given(requested).when(attempt(1, false, 2_000, 'gateway down')).then(first)).toMatchObject({ status: 'pending', attempts: 1 });
    given(requested, first).when(attempt(1, false, 2_500, 'again')).thenNothingHappened();
    const s = given(requested, first)
      .when(attempt(2, false, 3_000))
      .then({ type: 'SmsAttemptFailed', data: { ...ids(3_000), attempt: 2, error: 'failed' } }, { type: 'SmsFailed', data: { ...ids(3_000), attempts: 2, error: 'failed' } });
    expect(s.status).toBe('failed');
    given(requested, first).when(attempt(2, true, 3_000)).thenMatches({ type: 'SmsSent', data: { attempt: 2 } });
  });

  it('a try for an SMS never requested is refused', () => {
    given().when(attempt(1, true, 1)).thenThrows('CONFLICT', /not requested/);
  });
});
