/**
 * A queue's alerts (stream `queue-alert-<svcId>-<queueId>`, CONTRACT section 17): whether the queue
 * is in alert for each reason. The decider turns a reading into QueueAlert when the queue goes into
 * alert for a reason and QueueAlertCleared when it leaves it, and into nothing while it stays: so
 * each crossing is stored, delivered and shown once, whoever reads how often.
 */
import type { Decider, DomainEvent } from '../decider.js';

import type { AlertReason, AlertReading } from '../../domain/queue-alerts.js';

export type { AlertReason, AlertReading };

/** The JSON of the webhook delivery and the SSE message is `{"type", ...this}`. */
export interface QueueAlertData {
  svcId: number;
  queueId: number;
  reason: AlertReason;
  /** Seconds (wait) or percent (serviceLevel). */
  value: number;
  threshold: number;
  /** Epoch ms. */
  time: number;
}

export type QueueAlertEvent = DomainEvent<'QueueAlert', QueueAlertData> | DomainEvent<'QueueAlertCleared', QueueAlertData>;

export interface QueueAlertState {
  on: Partial<Record<AlertReason, boolean>>;
}


export type QueueAlertCommand = { type: 'Read'; svcId: number; queueId: number; reading: AlertReading; time: number };

export const queueAlertStream = (svcId: number, queueId: number) => `queue-alert-${svcId}-${queueId}`;

export const queueAlertDecider: Decider<QueueAlertCommand, QueueAlertState, QueueAlertEvent> = {
  initialState: () => ({ on: {} }),
  evolve: (s, e) => ({ on: { ...s.on, [e.data.reason]: e.type === 'QueueAlert' } }),
  decide(c, s) {
    const { reason, on, value, threshold } = c.reading;
    if (on === (s.on[reason] ?? false)) return [];
    const data: QueueAlertData = { svcId: c.svcId, queueId: c.queueId, reason, value, threshold, time: c.time };
    return [{ type: on ? 'QueueAlert' : 'QueueAlertCleared', data }];
  },
};
