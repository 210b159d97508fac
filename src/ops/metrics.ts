/**
 * The platform's Prometheus metrics (CONTRACT section 13), one registry per platform (tests run
 * several in one process). Request metrics are plain counts (./request-metrics.ts), so a request
 * costs one map lookup and a few increments. Gauges about the stores are computed when scraped,
 * never on the hot path.
 */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { RequestMetrics } from './request-metrics.js';

/** What gauges read at scrape time; each part is set by whoever owns the source. */
export interface MetricSources {
  /** Events in the log not yet applied by every read model. */
  projectionLag?: () => Promise<number>;
  /** Calls in progress, by service id. */
  activeCalls?: () => Promise<Map<number, number>>;
  /** Clients with an accepted key on the event socket of this process. */
  socketClients?: () => number;
  /** Event socket connections closed at once for being over a cap, since start, by cap. */
  socketRefused?: () => Record<'per_address' | 'pending', number>;
  /** Open server-sent event streams of this process. */
  liveStreams?: () => number;
  /** Jobs waiting (due or delayed) per queue. */
  jobsWaiting?: () => Promise<Record<string, number>>;
  /** Queue alerts in force (CONTRACT section 17). */
  queueAlerts?: () => Promise<{ svcId: number; queueId: number; reason: string }[]>;
}

export type DeliveryOutcome = 'delivered' | 'retry' | 'failed';

/** Route label for requests that matched no route: never the raw URL (unbounded, may hold secrets). */
export const UNMATCHED_ROUTE = 'unmatched';

export class PlatformMetrics {
  readonly registry = new Registry();
  readonly sources: MetricSources = {};
  private readonly requests: RequestMetrics;
  private readonly appended: Counter;
  private readonly deliveries: Counter<'kind' | 'outcome'>;

  constructor(options: { defaultMetrics?: boolean } = {}) {
    const registers = [this.registry];
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
    this.requests = new RequestMetrics(this.registry);
    this.appended = new Counter({ name: 'telephony_events_appended_total', help: 'Events appended to the event store by this process', registers });
    this.deliveries = new Counter({
      name: 'telephony_deliveries_total',
      help: 'Webhook and subscriber delivery attempts by kind and outcome (delivered, retry: failed and tried again later, failed: given up)',
      labelNames: ['kind', 'outcome'],
      registers,
    });
    const sources = this.sources;
    new Gauge({
      name: 'telephony_projection_lag_events',
      help: 'Events stored in the log but not yet applied by every read model',
      registers,
      async collect() {
        if (sources.projectionLag) this.set(await sources.projectionLag());
      },
    });
    new Gauge({
      name: 'telephony_queue_alerts',
      help: 'Queue alerts in force (1 each), by service, queue and reason',
      labelNames: ['svc_id', 'queue_id', 'reason'],
      registers,
      async collect() {
        this.reset();
        for (const a of (await sources.queueAlerts?.()) ?? []) this.set({ svc_id: String(a.svcId), queue_id: String(a.queueId), reason: a.reason }, 1);
      },
    });
    new Gauge({
      name: 'telephony_active_calls',
      help: 'Calls in progress, by service',
      labelNames: ['svc_id'],
      registers,
      async collect() {
        this.reset();
        if (!sources.activeCalls) return;
        for (const [svc, n] of await sources.activeCalls()) this.set({ svc_id: String(svc) }, n);
      },
    });
    new Gauge({
      name: 'telephony_socket_clients',
      help: 'Clients connected to the event socket of this process with an accepted key',
      registers,
      collect() {
        this.set(sources.socketClients?.() ?? 0);
      },
    });
    new Counter({
      name: 'telephony_socket_refused_total',
      help: 'Event socket connections closed at once for being over a cap: per_address (SOCKET_MAX_PER_ADDRESS from one address) or pending (connections without an accepted key)',
      labelNames: ['reason'],
      registers,
      collect() {
        // The server counts; the scrape reads its totals (a counter of this process since start).
        const refused = sources.socketRefused?.();
        this.reset();
        if (refused) for (const [reason, n] of Object.entries(refused)) this.inc({ reason }, n);
      },
    });
    new Gauge({
      name: 'telephony_live_streams',
      help: 'Open server-sent event streams (GET /api/v1/events) of this process',
      registers,
      collect() {
        this.set(sources.liveStreams?.() ?? 0);
      },
    });
    new Gauge({
      name: 'telephony_jobs_waiting',
      help: 'Jobs waiting to run (due or delayed), by queue',
      labelNames: ['queue'],
      registers,
      async collect() {
        this.reset();
        if (!sources.jobsWaiting) return;
        for (const [queue, n] of Object.entries(await sources.jobsWaiting())) this.set({ queue }, n);
      },
    });
  }

  /** One answered request; `route` is the route pattern (or {@link UNMATCHED_ROUTE}). */
  observeRequest(method: string, route: string, statusCode: number, seconds: number): void {
    this.requests.observe(method, route, statusCode, seconds);
  }

  eventsAppended(n: number): void {
    if (n > 0) this.appended.inc(n);
  }

  delivery(kind: string, outcome: DeliveryOutcome): void {
    this.deliveries.inc({ kind, outcome });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }
}
