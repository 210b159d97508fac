/**
 * Progress of long CLI work (provisioning a large document, exports, replay): a bar on stderr when
 * stderr is a terminal, nothing otherwise, so piped and scripted runs keep clean output.
 */
import cliProgress from 'cli-progress';

export interface Progress {
  /** Sets the work done so far (and the total, when it becomes known or changes). */
  update(done: number, total?: number): void;
  increment(by?: number): void;
  stop(): void;
}

const silent: Progress = { update() {}, increment() {}, stop() {} };

export function progress(
  label: string,
  total: number,
  stream: NodeJS.WritableStream & { isTTY?: boolean } = process.stderr,
  options: { unit?: string } = {},
): Progress {
  if (!stream.isTTY) return silent;
  const unit = options.unit ?? 'items';
  const bar = new cliProgress.SingleBar(
    {
      stream,
      format: `${label} [{bar}] {percentage}% | {value}/{total} ${unit} | {speed} ${unit}/s | ETA {eta_formatted}`,
      hideCursor: true,
      clearOnComplete: false,
      etaBuffer: 50,
      fps: 5,
    },
    cliProgress.Presets.shades_classic,
  );
  const started = Date.now();
  const speed = (done: number) => Math.round(done / Math.max((Date.now() - started) / 1000, 0.001));
  let done = 0;
  bar.start(Math.max(total, 0), 0, { speed: 0 });
  return {
    update(value, newTotal) {
      done = value;
      if (newTotal !== undefined) bar.setTotal(newTotal);
      bar.update(value, { speed: speed(value) });
    },
    increment(by = 1) {
      done += by;
      bar.update(done, { speed: speed(done) });
    },
    stop() {
      bar.stop();
    },
  };
}
