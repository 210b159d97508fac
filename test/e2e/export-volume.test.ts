/**
 * An export of 100,000 calls streams in bounded memory: the server's heap (and for xlsx, the zip's
 * buffers) grows by a small fraction of what the answer weighs while it is read. The rows are put
 * straight into the analytics store (how they get there from the log is the other tests' subject);
 * the synthetic 1,000,000-event log and its replay are the bench's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { TestServer } from '../support/server.js';
import { startProvisioned } from '../support/server.js';
import { AnalyticsStore } from '../../src/analytics/store.js';
import { webhookTime } from '../../src/domain/time.js';

const CALLS = 100_000;
const START = Date.UTC(2026, 0, 5);

describe('export of 100,000 calls', () => {
  let s: TestServer;

  beforeAll(async () => {
    s = await startProvisioned();
    const store = new AnalyticsStore(path.join(s.dataDir, 'analytics.db'));
    const insert = store.db.prepare('INSERT INTO call_rows (svc_id, start_time, xnid, row) VALUES (?, ?, ?, ?)');
    store.db.transaction(() => {
      for (let i = 0; i < CALLS; i++) {
        const start = START + i * 600;
        const xnid = `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
        const row = {
          callid: xnid,
          'call-duration': '42',
          'agent-number': '9100001001',
          'customer-number': `98${String(i).padStart(8, '0')}`,
          'end-time': webhookTime(start + 42_000, 'Asia/Kolkata'),
          'start-time': webhookTime(start, 'Asia/Kolkata'),
          'recording-url': `http://127.0.0.1/recordings/${xnid}.wav?exp=1&sig=abc`,
          'call-type': 'incoming',
          'virtual-number': '8000000101',
          disposition: 'answered',
          'svc-id': 101,
          'agent-id': 1001,
          'ivr-data': '1',
        };
        insert.run(101, start, xnid, JSON.stringify(row));
      }
    })();
    store.close();
  }, 120_000);
  afterAll(async () => {
    await s?.stop();
  });

  /** Live heap after a full collection: what the process holds, not what it has yet to collect. */
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const live = () => {
    gc();
    return process.memoryUsage().heapUsed;
  };

  for (const format of ['json', 'csv'] as ('json' | 'jsonl' | 'csv')[]) {
    it(`${format}: every call, oldest first, in bounded memory`, async () => {
      const base = live();
      let peak = base;
      let chunks = 0;
      const res = await s.api(`/api/v1/calls?svc-id=101&from=${START}&to=${START + 86_400_000}&format=${format}`, {});
      expect(res.status).toBe(200);
      let bytes = 0;
      let newlines = 0;
      let tail = '';
      let head = '';
      const decoder = new TextDecoder();
      for await (const chunk of res.body!) {
        bytes += chunk.byteLength;
        const text = decoder.decode(chunk, { stream: true });
        if (head.length < 200) head += text.slice(0, 200);
        for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) newlines++;
        tail = (tail + text).slice(-200);
        if (++chunks % 40 === 0) peak = Math.max(peak, live());
      }
      const rows = format === 'jsonl' ? newlines : format === 'csv' ? newlines - 1 : null;
      if (rows !== null) expect(rows).toBe(CALLS);
      else expect(head.startsWith('[{"callid":"00000000-0000-4000-8000-000000000000"')).toBe(true);
      expect(tail.endsWith(format === 'json' ? '"ivr-data":"1"}]' : '\n')).toBe(true);
      expect(bytes).toBeGreaterThan(10_000_000);
      // The whole answer held at once would weigh at least its byte size (as strings alone), plus its rows as objects.
      expect(peak - base).toBeLessThan(Math.min(bytes / 2, 8 * 1024 * 1024));
    }, 120_000);
  }

  it('xlsx: every call in bounded memory, the zip kept to the pace of the client', async () => {
    // The zip's buffers are outside the JS heap: count them too.
    const held = () => {
      gc();
      const m = process.memoryUsage();
      return m.heapUsed + m.arrayBuffers;
    };
    const base = held();
    let peak = base;
    let chunks = 0;
    let bytes = 0;
    const res = await s.api(`/api/v1/calls?svc-id=101&from=${START}&to=${START + 86_400_000}&format=xlsx`, {});
    expect(res.status).toBe(200);
    let head: Uint8Array | null = null;
    let tail = new Uint8Array(0);
    for await (const chunk of res.body!) {
      head ??= chunk.slice(0, 4);
      bytes += chunk.byteLength;
      tail = chunk.byteLength >= 22 ? chunk.slice(-22) : tail;
      if (++chunks % 20 === 0) {
        peak = Math.max(peak, held());
        // A slow client: the export must wait for it rather than queue the sheet.
        await new Promise((r) => setTimeout(r, 2));
      }
    }
    expect([...head!]).toEqual([0x50, 0x4b, 0x03, 0x04]); // a zip
    expect([...tail.slice(0, 4)]).toEqual([0x50, 0x4b, 0x05, 0x06]); // ending with its directory
    expect(bytes).toBeGreaterThan(3_000_000);
    // The sheet's XML alone weighs over 40 MB: bounded means a few MiB of it at a time.
    expect(peak - base).toBeLessThan(16 * 1024 * 1024);
  }, 180_000);
});
