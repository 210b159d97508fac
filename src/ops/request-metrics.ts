/**
 * `http_requests_total` and `http_request_duration_seconds` on the hot path: per (method, route,
 * status) one map lookup and a few array increments. prom-client's labelled metrics hash their label
 * object on every call, several times the cost, so these two are plain counts handed to the
 * registry as custom metrics (the `get()` shape prom-client renders) when scraped.
 */
import type { Registry } from 'prom-client';

export const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

interface Series {
  labels: { method: string; route: string; status_code: string };
  count: number;
  sum: number;
  /** Observations per bucket (not cumulative); the last slot is above the largest bound. */
  buckets: Float64Array;
}

type Value = { labels: Record<string, string | number>; value: number; metricName?: string };

export class RequestMetrics {
  private readonly series = new Map<string, Series>();
  private readonly byRoute = new Map<string, Map<string, Map<number, Series>>>();

  constructor(registry: Registry) {
    const series = this.series;
    registry.registerMetric({
      name: 'http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status code',
      type: 'counter',
      aggregator: 'sum',
      get: async () => ({
        name: 'http_requests_total',
        help: 'HTTP requests answered, by method, route pattern and status code',
        type: 'counter',
        aggregator: 'sum',
        values: [...series.values()].map((s) => ({ labels: s.labels, value: s.count })),
      }),
    } as never);
    registry.registerMetric({
      name: 'http_request_duration_seconds',
      help: 'Time from receiving a request to answering it, by method, route pattern and status code',
      type: 'histogram',
      aggregator: 'sum',
      get: async () => {
        const values: Value[] = [];
        for (const s of series.values()) {
          let cumulative = 0;
          DURATION_BUCKETS.forEach((le, i) => {
            cumulative += s.buckets[i]!;
            values.push({ metricName: 'http_request_duration_seconds_bucket', labels: { ...s.labels, le }, value: cumulative });
          });
          values.push({ metricName: 'http_request_duration_seconds_bucket', labels: { ...s.labels, le: '+Inf' }, value: s.count });
          values.push({ metricName: 'http_request_duration_seconds_sum', labels: s.labels, value: s.sum });
          values.push({ metricName: 'http_request_duration_seconds_count', labels: s.labels, value: s.count });
        }
        return {
          name: 'http_request_duration_seconds',
          help: 'Time from receiving a request to answering it, by method, route pattern and status code',
          type: 'histogram',
          aggregator: 'sum',
          values,
        };
      },
    } as never);
  }

  observe(method: string, route: string, statusCode: number, seconds: number): void {
    // By route, then method and status: lookups without building a key string per request.
    let byRoute = this.byRoute.get(route);
    if (!byRoute) this.byRoute.set(route, (byRoute = new Map()));
    let byMethod = byRoute.get(method);
    if (!byMethod) byRoute.set(method, (byMethod = new Map()));
    let s = byMethod.get(statusCode);
    if (!s) {
      s = { labels: { method, route, status_code: String(statusCode) }, count: 0, sum: 0, buckets: new Float64Array(DURATION_BUCKETS.length + 1) };
      byMethod.set(statusCode, s);
      this.series.set(`${method} ${statusCode} ${route}`, s);
    }
    s.count++;
    s.sum += seconds;
    let i = 0;
    while (i < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[i]!) i++;
    s.buckets[i]!++;
  }
}
