/** Read model `sms`: each SMS's status and tries, by id. */
import type { SmsRequestedData } from '../commands/sms/sms.js';
import type { Projection } from './projection.js';

export interface SmsDoc extends Record<string, unknown> {
  id: string;
  svcId: number;
  number: string;
  tries: number;
  attempts: number;
  status: 'pending' | 'sent' | 'failed';
  requestedAt: number;
  sentAt: number | null;
}

const TYPES = new Set(['SmsRequested', 'SmsSent', 'SmsAttemptFailed', 'SmsFailed']);

export const smsProjection: Projection<SmsDoc> = {
  name: 'sms',
  keys: (e) => (TYPES.has(e.type) ? [(e.data as { id: string }).id] : []),
  evolve(doc, e) {
    if (e.type === 'SmsRequested') {
      const d = e.data as SmsRequestedData;
      return { id: d.id, svcId: d.svcId, number: d.number, tries: d.tries, attempts: 0, status: 'pending', requestedAt: d.time, sentAt: null };
    }
    if (!doc) return doc;
    const d = e.data as { attempt?: number; time: number };
    switch (e.type) {
      case 'SmsSent':
        return { ...doc, attempts: d.attempt!, status: 'sent', sentAt: d.time };
      case 'SmsAttemptFailed':
        return { ...doc, attempts: d.attempt! };
      default:
        return { ...doc, status: 'failed' };
    }
  },
};
