/**
 * Webhook delivery throughput: N finished calls appended at once, each webhook POSTed (signed) to a
 * local receiver. perSecond = deliveries / (last arrival - first append); p50/p99 = ms from the
 * CallEnded append to the receiver seeing the POST. Runs on the embedded stores in a temp DATA_DIR.
 */
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { createPlatform } from '../src/platform.js';
import { applyProvisioning } from '../src/commands/provisioning/provision.js';
import type { CallEndedData } from '../src/domain/call-events.js';

export interface BenchResult {
  name: string;
  /** Event-store appends and commits per delivery, from the CallEnded on. */
  appendsPerDelivery: number;
  commitsPerDelivery: number;
  /** WAL syncs (fsyncs) of the event store per delivery: commits made together share one. */
  syncsPerDelivery: number;
  perSecond: number;
  p50: number;
  p99: number;
}

/** Commit and append counts of the embedded event store (zeros for another adapter). */
export const storeStats = (events: object): { commits: number; appends: number; syncs: number } => ({ commits: 0, appends: 0, syncs: 0, ...(events as { stats?: { commits: number; appends: number; syncs: number } }).stats });

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

export async function benchWebhooks(options: { calls?: number } = {}): Promise<BenchResult> {
  const calls = options.calls ?? 2000;
  const appendedAt = new Map<string, number>();
  const latencies: number[] = [];
  let lastArrival = 0;
  let done!: () => void;
  const allDone = new Promise<void>((r) => (done = r));
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = String(req.headers['webhook-id']);
      const t0 = appendedAt.get(id);
      if (t0 !== undefined) {
        appendedAt.delete(id);
        lastArrival = performance.now();
        latencies.push(lastArrival - t0);
        if (latencies.length === calls) done();
      }
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const receiverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;

  const dataDir = mkdtempSync(path.join(tmpdir(), 'ct-bench-webhooks-'));
  const config = loadConfig({ PORT: '0', SOCKET_PORT: '0', DATA_DIR: dataDir, OPERATOR_TOKEN: 'bench', LOG_LEVEL: 'silent', WEBHOOK_ALLOW_PRIVATE: 'true', ROLES: 'worker,projector' });
  const platform = await createPlatform(config, { logger: pino({ level: 'silent' }) });
  try {
    await platform.start();
    const doc = {
      services: [{ id: 101, name: 'Bench', customer: 'bench', timezone: 'UTC', dids: ['8000000101'], skills: [], queues: [], webhook: { url: receiverUrl, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }, socketKey: 'k', blocked: [], customers: [], agents: [] }],
      users: [],
    };
    const applied = await applyProvisioning(platform.ctx.events, doc);
    await platform.ctx.sync.waitFor(applied.position);
    const start = performance.now();
    const before = storeStats(platform.ctx.events);
    // All at once, as a busy minute's finished calls would be (the appends share commits).
    const appends: Promise<unknown>[] = [];
    for (let i = 0; i < calls; i++) {
      const xnid = randomUUID();
      const data: CallEndedData = {
        xnid, svcId: 101, direction: 'Outbound', disposition: 'answered', startTime: 0, endTime: 1000, durationS: 1, agentId: null, agentNumber: '', customerNumber: '9876543210', recordingUrl: null,
        webhook: { callid: xnid, 'call-duration': '1', 'agent-number': '', 'customer-number': '9876543210', 'end-time': '2024-05-01 10:00:01', 'start-time': '2024-05-01 10:00:00', 'call-type': 'outgoing', 'virtual-number': '8000000101', disposition: 'answered' },
      };
      appendedAt.set(xnid, performance.now());
      appends.push(platform.ctx.events.appendToStream(`call-${xnid}`, [{ type: 'CallEnded', data }]));
    }
    await Promise.all(appends);
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`webhooks bench: ${latencies.length}/${calls} delivered in 120 s`)), 120_000).unref());
    await Promise.race([allDone, timeout]);
    latencies.sort((a, b) => a - b);
    const after = storeStats(platform.ctx.events);
    return {
      appendsPerDelivery: (after.appends - before.appends) / calls,
      commitsPerDelivery: (after.commits - before.commits) / calls,
      syncsPerDelivery: (after.syncs - before.syncs) / calls,
      name: 'webhook deliveries',
      perSecond: Math.round((calls / (lastArrival - start)) * 1000),
      p50: Math.round(quantile(latencies, 0.5) * 10) / 10,
      p99: Math.round(quantile(latencies, 0.99) * 10) / 10,
    };
  } finally {
    await platform.stop();
    await new Promise<void>((r) => server.close(() => r()));
    rmSync(dataDir, { recursive: true, force: true });
  }
}
