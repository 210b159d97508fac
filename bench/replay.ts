/**
 * The analysts' suite: replay of a 1,000,000-event log (calls, agent changes, SMS over a year), a
 * year's reports on the result, and the peak RSS of a 100,000-call xlsx export.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { createPlatform } from '../src/platform.js';
import { replay } from '../src/projections/replay.js';
import { writeSyntheticLog } from './synthetic-log.js';

export interface ReplayBench {
  events: number;
  calls: number;
  writeSeconds: number;
  replaySeconds: number;
  /** CPU seconds of every thread of the process during the replay. */
  replayCpuSeconds: number;
  replayThreads: number;
  /** The one-minute load average when the replay started (the machine may be shared). */
  replayLoad: number;
  agentReportMs: number;
  serviceReportMs: number;
  exportCalls: number;
  exportSeconds: number;
  exportBytes: number;
  exportPeakRssMiB: number;
}

const YEAR = 365 * 86_400_000;

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t = performance.now();
  const r = await fn();
  return [r, performance.now() - t];
}

export async function benchReplay(options: { events: number; exportCalls: number }): Promise<ReplayBench> {
  const dir = mkdtempSync(path.join(tmpdir(), 'ct-bench-replay-'));
  const exportDir = mkdtempSync(path.join(tmpdir(), 'ct-bench-export-'));
  try {
    const start = Date.UTC(2025, 0, 1);
    const [log, writeMs] = await timed(() => writeSyntheticLog({ file: path.join(dir, 'events.db'), events: options.events, start, spanMs: YEAR }));
    const config = loadConfig({ EMBEDDED_THREADS: process.env.EMBEDDED_THREADS, DATA_DIR: dir, PORT: '0', SOCKET_PORT: '0', HOST: '127.0.0.1', OPERATOR_TOKEN: randomBytes(12).toString('hex'), RATE_LIMIT_RPS: '0', LOG_LEVEL: 'silent' });
    const replayLoad = loadavg()[0]!;
    const cpu0 = process.cpuUsage();
    const result = await replay(config);
    const cpu = process.cpuUsage(cpu0);

    // A year's reports, answered by the platform started on the replayed stores.
    const platform = await createPlatform(config, { logger: pino({ level: 'silent' }) });
    const { httpUrl } = await platform.start();
    const auth = { authorization: `Basic ${Buffer.from('bench-admin:bench-admin-pw').toString('base64')}` };
    const report = async (p: string) => {
      const res = await fetch(httpUrl + p, { headers: auth });
      if (res.status !== 200) throw new Error(`${p}: ${res.status} ${await res.text()}`);
      return res.json();
    };
    const range = `svc-id=${log.svcId}&from=${start}&to=${start + YEAR}`;
    await report(`/api/v1/reports/agents?${range}`); // warm: auth, statements
    const [, agentReportMs] = await timed(() => report(`/api/v1/reports/agents?${range}`));
    const [days, serviceReportMs] = await timed(() => report(`/api/v1/reports/service?${range}&interval=day`));
    if ((days as unknown[]).length < 365) throw new Error('the service report did not cover the year');
    await platform.stop();

    // The export: 100,000 calls in one day, exported as xlsx by a process of its own, so its peak RSS is the export's.
    const exportStart = Date.UTC(2026, 0, 5);
    await writeSyntheticLog({ file: path.join(exportDir, 'events.db'), calls: options.exportCalls, minimal: true, start: exportStart, spanMs: 20 * 3_600_000 });
    await replay(loadConfig({ EMBEDDED_THREADS: process.env.EMBEDDED_THREADS, DATA_DIR: exportDir }));
    const exported = await new Promise<{ bytes: number; seconds: number; maxRssKiB: number }>((resolve, reject) => {
      const child = fork(new URL('./export-worker.js', import.meta.url), [exportDir, String(exportStart), String(exportStart + 86_400_000)], { stdio: 'inherit' });
      child.once('message', (m) => resolve(m as { bytes: number; seconds: number; maxRssKiB: number }));
      child.once('error', reject);
      child.once('exit', (code) => code !== 0 && reject(new Error(`export worker exited with ${code}`)));
    });
    return {
      events: result.events,
      calls: log.calls,
      writeSeconds: writeMs / 1000,
      replaySeconds: result.seconds,
      replayCpuSeconds: (cpu.user + cpu.system) / 1e6,
      replayThreads: result.threads,
      replayLoad,
      agentReportMs,
      serviceReportMs,
      exportCalls: options.exportCalls,
      exportSeconds: exported.seconds,
      exportBytes: exported.bytes,
      exportPeakRssMiB: exported.maxRssKiB / 1024,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(exportDir, { recursive: true, force: true });
  }
}
