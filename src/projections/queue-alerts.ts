/** Read model `queue-alerts`: the live alerts of the queues (CONTRACT section 17), by `<svcId>-<queueId>-<reason>`. */
import type { QueueAlertData } from '../commands/queue-alert/queue-alert.js';
import { projection, type Projection } from './projection.js';

export interface QueueAlertDoc extends QueueAlertData, Record<string, unknown> {}

export const queueAlertsProjection: Projection<QueueAlertDoc> = projection({
  name: 'queue-alerts',
  canHandle: ['QueueAlert', 'QueueAlertCleared'],
  keys: (e) => [`${e.data.svcId}-${e.data.queueId}-${e.data.reason}`],
  evolve: (_doc, e) => (e.type === 'QueueAlert' ? { ...e.data } : null),
});
