/** The SMS aggregate (`sms-<id>`): requested, each try and its outcome, then sent or failed. */
import type { Decider, DomainEvent } from '../decider.js';
import { conflict } from '../../domain/errors.js';

export interface SmsRequestedData {
  id: string;
  svcId: number;
  number: string;
  /** The text sent; an OTP's code is masked here (only its hash is stored anywhere). */
  message: string;
  countryCode: string;
  callTxnId: string | null;
  tries: number;
  otp: boolean;
  userId: number | null;
  time: number;
}

type Ids = { id: string; svcId: number; time: number };

export type SmsEvent =
  | DomainEvent<'SmsRequested', SmsRequestedData>
  | DomainEvent<'SmsSent', Ids & { attempt: number }>
  | DomainEvent<'SmsAttemptFailed', Ids & { attempt: number; error: string }>
  | DomainEvent<'SmsFailed', Ids & { attempts: number; error: string }>;

export interface SmsState {
  requested: SmsRequestedData | null;
  attempts: number;
  status: 'none' | 'pending' | 'sent' | 'failed';
}

export type SmsCommand =
  | { type: 'Request'; data: SmsRequestedData }
  | { type: 'RecordAttempt'; attempt: number; ok: boolean; error?: string; time: number };

export const smsDecider: Decider<SmsCommand, SmsState, SmsEvent> = {
  initialState: () => ({ requested: null, attempts: 0, status: 'none' }),
  evolve(s, e) {
    switch (e.type) {
      case 'SmsRequested':
        return { ...s, requested: e.data, status: 'pending' };
      case 'SmsSent':
        return { ...s, attempts: e.data.attempt, status: 'sent' };
      case 'SmsAttemptFailed':
        return { ...s, attempts: e.data.attempt };
      case 'SmsFailed':
        return { ...s, status: 'failed' };
    }
  },
  decide(c, s) {
    if (c.type === 'Request') return s.requested ? [] : [{ type: 'SmsRequested', data: c.data }];
    if (!s.requested) throw conflict('sms not requested');
    // A try already recorded (a job run again after a crash) changes nothing.
    if (s.status !== 'pending' || c.attempt <= s.attempts) return [];
    const ids = { id: s.requested.id, svcId: s.requested.svcId, time: c.time };
    if (c.ok) return [{ type: 'SmsSent', data: { ...ids, attempt: c.attempt } }];
    const error = c.error ?? 'failed';
    const failed: SmsEvent[] = [{ type: 'SmsAttemptFailed', data: { ...ids, attempt: c.attempt, error } }];
    if (c.attempt >= s.requested.tries) failed.push({ type: 'SmsFailed', data: { ...ids, attempts: c.attempt, error } });
    return failed;
  },
};
