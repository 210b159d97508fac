/** What request handlers, workers and commands share: the adapters behind the ports, config, clock. */
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { EventStore } from './gateways/event-store/port.js';
import type { ReadStore } from './gateways/read-store/port.js';
import type { JobQueue } from './gateways/queue/port.js';
import type { ReadSync } from './projections/read-sync.js';
import type { RecordingSigner } from './domain/recording.js';
import type { SmsGateway } from './gateways/sms/port.js';

export interface Context {
  config: Config;
  events: EventStore;
  reads: ReadStore;
  /** Background jobs (deliveries, timers): embedded, or BullMQ when REDIS_URL is set. */
  queue: JobQueue;
  sync: ReadSync;
  logger: Logger;
  /** Signs and checks recording URLs. */
  signer: RecordingSigner;
  /** The SMS provider (simulator by default). */
  sms: SmsGateway;
  /** Epoch ms; injectable so tests control time. */
  now: () => number;
}
