/** Read model `sms`: each SMS's status and tries, by id. */
import type { SmsRequestedData } from '../commands/sms/sms.js';
import { projection, type Projection } from './projection.js';

export interface SmsDoc extends Pick<SmsRequestedData, 'id' | 'svcId' | 'number' | 'tries'>, Record<string, unknown> {
  attempts: number;
  status: 'pending' | 'sent' | 'failed';
  requestedAt: number;
  sentAt: number | null;
}

export const smsProjection: Projection<SmsDoc> = projection({
  name: 'sms',
  canHandle: ['SmsRequested', 'SmsSent', 'SmsAttemptFailed', 'SmsFailed'],
  keys: (e) => [e.data.id],
  evolve(doc, e) {
    if (e.type === 'SmsRequested') {
      const d = e.data;
      return { id: d.id, svcId: d.svcId, number: d.number, tries: d.tries, attempts: 0, status: 'pending', requestedAt: d.time, sentAt: null };
    }
    if (!doc) return doc;
    switch (e.type) {
      case 'SmsSent':
        return { ...doc, attempts: e.data.attempt, status: 'sent', sentAt: e.data.time };
      case 'SmsAttemptFailed':
        return { ...doc, attempts: e.data.attempt };
      case 'SmsFailed':
        return { ...doc, status: 'failed' };
    }
  },
});
