/**
 * The queue-alert monitor (role `worker`, CONTRACT section 17): every half second it reads each
 * queue with `maxWaitS` or `serviceLevelTarget` from the read models (the callers waiting, the
 * callers who entered in the last 15 minutes; both derived from the event log) and hands each
 * reading to the queue's alert aggregate, which stores QueueAlert / QueueAlertCleared only on a
 * crossing. The clock matters as much as the events: a caller passes `maxWaitS` without any event.
 * Deliveries, the SSE stream, the wallboard and the metric all follow the stored events, so a
 * restart or a replay neither repeats nor loses a crossing.
 */
import type { Context } from '../../context.js';
import type { ServiceDoc } from '../../projections/services.js';
import type { QueuedCallerDoc } from '../../projections/calls.js';
import { todaysOutcomes } from '../../queries/wallboard.js';
import { handleCommand } from '../../commands/decider.js';
import { queueAlertDecider, queueAlertStream, type AlertReading } from '../../commands/queue-alert/queue-alert.js';
import { queueReadings, SL_WINDOW_MS, type QueueEntry } from '../../domain/queue-alerts.js';
import { dayOf } from '../../domain/time.js';

export const ALERT_TICK_MS = 500;

export class QueueAlertMonitor {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  /** What the aggregate holds, as far as this process knows (`svc-queue-reason` → on); unknown: ask it. */
  private readonly known = new Map<string, boolean>();

  constructor(private readonly ctx: Context) {}

  start(): void {
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.tick()
        .catch((err) => this.ctx.logger.error({ err }, 'queue alert check failed'))
        .finally(() => (this.running = null));
    }, ALERT_TICK_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /** One look at every watched queue (tests call it directly). */
  async tick(): Promise<void> {
    const services = await this.ctx.reads.find<ServiceDoc>('services');
    for (const service of services) {
      const watched = service.queues.filter((q) => q.maxWaitS !== undefined || q.serviceLevelTarget !== undefined);
      if (watched.length === 0) continue;
      const now = this.ctx.now();
      const waiting = await this.ctx.reads.find<QueuedCallerDoc>('queued-callers', { svcId: service.svcId });
      const entries = watched.some((q) => q.serviceLevelTarget !== undefined) ? await this.recentEntries(service, now) : [];
      for (const q of watched) {
        const since = waiting.filter((w) => w.queueId === q.id).map((w) => w.since);
        const mine = entries.filter((e) => e.queueId === q.id);
        for (const reading of queueReadings(q, since, mine, now)) await this.record(service.svcId, q.id, reading, now);
      }
    }
  }

  /** The inbound callers who entered the service's queues in the last 15 minutes (today's and, past midnight, yesterday's calls). */
  private async recentEntries(service: ServiceDoc, now: number): Promise<(QueueEntry & { queueId: number })[]> {
    const days = new Set([dayOf(now - SL_WINDOW_MS, service.timezone), dayOf(now, service.timezone)]);
    const out: (QueueEntry & { queueId: number })[] = [];
    for (const day of days) {
      // Read again only when the read model moved (wallboard.ts keeps today's per service).
      for (const d of await todaysOutcomes(this.ctx, service.svcId, day)) {
        if (d.queuedAt === null || d.queueId === undefined || d.queuedAt <= now - SL_WINDOW_MS) continue;
        out.push({ queueId: d.queueId, queuedAt: d.queuedAt, answeredAt: d.answeredAt, ended: d.disposition !== null });
      }
    }
    return out;
  }

  private async record(svcId: number, queueId: number, reading: AlertReading, now: number): Promise<void> {
    const key = `${svcId}-${queueId}-${reading.reason}`;
    if (this.known.get(key) === reading.on) return;
    const r = await handleCommand(this.ctx.events, queueAlertStream(svcId, queueId), queueAlertDecider, { type: 'Read', svcId, queueId, reading, time: now });
    this.known.set(key, r.state.on[reading.reason] ?? false);
  }
}
