/** What request handlers, workers and commands share: the adapters behind the ports, config, clock. */
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { EventStore } from './gateways/event-store/port.js';
import type { ReadStore } from './gateways/read-store/port.js';
import type { JobQueue } from './gateways/queue/port.js';
import type { ReadSync } from './projections/read-sync.js';
import type { RecordingSigner } from './domain/recording.js';
import type { CursorCodec } from './domain/cursor.js';
import type { SmsGateway } from './gateways/sms/port.js';
import type { PlatformMetrics } from './ops/metrics.js';
import type { Readiness } from './ops/readiness.js';
import type { Analytics } from './analytics/projector.js';

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
  /** Makes and checks the live event streams' resume cursors (signed: only the server makes them). */
  cursors: CursorCodec;
  /** The SMS provider (simulator by default). */
  sms: SmsGateway;
  /** Prometheus metrics of this process (GET /metrics). */
  metrics: PlatformMetrics;
  /** GET /readyz: stores answer, read models caught up with the log as it stood at start. */
  readiness: Readiness;
  /** Analysts' read models: call export rows, report rows, the dashboard's timeline (CONTRACT section 12). */
  analytics: Analytics;
  /** Epoch ms; injectable so tests control time. */
  now: () => number;
}
