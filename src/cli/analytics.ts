/** `telephony replay` and `telephony export calls` (CONTRACT section 12). */
import { createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import cliProgress from 'cli-progress';
import type { Config } from '../config.js';
import { openAnalyticsStore, openEventStore } from '../platform.js';
import { replay } from '../projections/replay.js';
import { AnalyticsModel } from '../analytics/model.js';
import { EXPORT_FORMATS, exportRange, exportRows, exportStream, type ExportFormat, type ExportRow } from '../analytics/export.js';
import type { AnalyticsStore } from '../analytics/store.js';
import { UsageError } from './command.js';

export { UsageError };

/** A progress bar on stderr when it is a terminal; nothing otherwise. */
function progressBar(format: string) {
  if (!process.stderr.isTTY) return null;
  return new cliProgress.SingleBar(
    { stream: process.stderr, format, hideCursor: true, etaBuffer: 50, fps: 5 },
    cliProgress.Presets.shades_classic,
  );
}

export async function replayCommand(config: Config): Promise<number> {
  const bar = progressBar('replay [{bar}] {percentage}% | {value}/{total} events | {rate} events/s | ETA {eta_formatted}');
  const t0 = performance.now();
  let startedBar = false;
  let lastLine = 0;
  try {
    const result = await replay(config, {
      onProgress: ({ events, total }) => {
        const s = (performance.now() - t0) / 1000;
        const rate = Math.round(events / Math.max(s, 0.001));
        if (bar) {
          if (!startedBar) {
            bar.start(total, 0, { rate: 0 });
            startedBar = true;
          }
          bar.update(events, { rate });
        } else if (s - lastLine >= 1 || events === total) {
          // Not a terminal: a plain line a second, for logs.
          lastLine = s;
          process.stderr.write(`replay: ${events}/${total} events, ${rate} events/s\n`);
        }
      },
    });
    bar?.stop();
    process.stdout.write(`replayed ${result.events} events in ${result.seconds.toFixed(2)} s\n`);
    return 0;
  } catch (err) {
    bar?.stop();
    process.stderr.write(`replay failed, the read models are left as they were: ${(err as Error).message}\n`);
    return 1;
  }
}

/**
 * Brings the analytics store up to the log's head when no server does it, so an export made with
 * the server stopped sees every event. A running server's projector writes the same rows: the
 * store's checkpoint guard lets only one of them write each range, and then this waits for it.
 */
async function catchUp(config: Config, store: AnalyticsStore): Promise<void> {
  const events = await openEventStore(config, Date.now);
  try {
    const head = await events.headPosition();
    const model = new AnalyticsModel(store);
    await model.load(events);
    let after = model.position;
    while (after < head) {
      const page = await events.readAll({ after, maxCount: 5000 });
      if (page.length === 0) break;
      for (const e of page) model.apply(e);
      after = page[page.length - 1]!.position;
      try {
        model.flush();
      } catch (err) {
        if ((err as Error).name !== 'CheckpointMovedError') throw err;
        // A running server folded these events meanwhile: wait for it to reach the head.
        const deadline = Date.now() + 30_000;
        while (store.checkpoint() < head && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
        return;
      }
    }
  } finally {
    await events.close();
  }
}

/** Parses T: epoch ms, or an ISO 8601 date/time. */
export function parseInstant(name: string, raw: string): number {
  if (/^\d+$/.test(raw)) return Number(raw);
  const t = Date.parse(raw);
  if (!Number.isFinite(t) || !/^\d{4}-\d{2}-\d{2}/.test(raw)) throw new UsageError(`${name} must be epoch ms or an ISO 8601 date/time, got "${raw}"`);
  return t;
}

export async function exportCommand(config: Config, args: string[]): Promise<number> {
  const opts: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const m = /^--(svc|from|to|format|out)(?:=(.*))?$/.exec(a);
    if (!m) throw new UsageError(`unknown option ${a}`);
    const value = m[2] ?? args[++i];
    if (value === undefined) throw new UsageError(`--${m[1]} needs a value`);
    opts[m[1]!] = value;
  }
  if (!opts.svc || !/^\d+$/.test(opts.svc)) throw new UsageError('--svc ID is required');
  const format = (opts.format ?? 'json') as ExportFormat;
  if (!EXPORT_FORMATS.includes(format)) throw new UsageError(`--format must be one of ${EXPORT_FORMATS.join(', ')}`);
  const { from, to } = exportRange(
    Date.now(),
    opts.from === undefined ? undefined : parseInstant('--from', opts.from),
    opts.to === undefined ? undefined : parseInstant('--to', opts.to),
  );
  const store = openAnalyticsStore(config);
  try {
    await catchUp(config, store);
    const bar = progressBar('export [{bar}] {percentage}% | {value}/{total} calls');
    const total = bar ? store.countCalls(Number(opts.svc), from, to) : 0;
    bar?.start(total, 0);
    let n = 0;
    const rows = (function* (): Generator<ExportRow> {
      for (const r of exportRows(store, Number(opts.svc), from, to)) {
        yield r;
        if (bar && ++n % 100 === 0) bar.update(n);
      }
    })();
    const out = opts.out ? createWriteStream(opts.out) : process.stdout;
    await pipeline(exportStream(rows, format), out);
    bar?.update(n);
    bar?.stop();
    return 0;
  } finally {
    store.close();
  }
}

