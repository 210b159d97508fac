import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { EmbeddedJobQueue } from '../../src/gateways/queue/embedded.js';
import { jobQueueContract } from './queue.contract.js';

const dir = mkdtempSync(path.join(tmpdir(), 'ct-queue-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

jobQueueContract('embedded (SQLite)', {
  open: async (name) => new EmbeddedJobQueue(path.join(dir, `${name}.db`), { pollMs: 20, leaseMs: 300 }),
});

it('polls on the index only: finished jobs (kept a week) are never read, nothing is sorted', async () => {
  const q = new EmbeddedJobQueue(path.join(dir, 'plans.db'));
  for (const plan of q.pollPlans()) {
    expect(plan).toMatch(/USING (COVERING )?INDEX jobs_due \(queue=\? AND state=\?/);
    expect(plan).not.toMatch(/TEMP B-TREE|SCAN/);
  }
  await q.close();
});
