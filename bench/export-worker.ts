/** Child process of the replay suite: one xlsx export of a service's calls to nowhere; reports its size, time and peak RSS. */
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { AnalyticsStore } from '../src/analytics/store.js';
import { exportRows, exportStream } from '../src/analytics/export.js';

const [dir, from, to] = process.argv.slice(2);
const store = new AnalyticsStore(path.join(dir!, 'analytics.db'));
let bytes = 0;
const t = performance.now();
await pipeline(
  exportStream(exportRows(store, 101, Number(from), Number(to)), 'xlsx'),
  new Writable({
    write(chunk: Buffer, _enc, cb) {
      bytes += chunk.length;
      cb();
    },
  }),
);
store.close();
process.send!({ bytes, seconds: (performance.now() - t) / 1000, maxRssKiB: peakRssKiB() });

/**
 * This process's own peak RSS. Not `resourceUsage().maxRSS`: a forked child inherits the parent's
 * peak in it (the replay bench's parent holds a million events' worth by then). VmHWM is the peak of
 * this process's own address space.
 */
function peakRssKiB(): number {
  try {
    const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (m) return Number(m[1]);
  } catch {
    // not Linux
  }
  return process.resourceUsage().maxRSS;
}
