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

it("a new worker takes over a dead worker's running jobs at once, not after their lease", async () => {
  const file = path.join(dir, 'takeover.db');
  // A lease far longer than the deadline below: only the takeover can run the job again in time.
  const a = new EmbeddedJobQueue(file, { pollMs: 20, leaseMs: 60_000 });
  let startedOnA!: () => void;
  const runningOnA = new Promise<void>((r) => (startedOnA = r));
  a.process<{ n: number }>('q', () => {
    startedOnA();
    return new Promise<void>(() => {}); // still running when its process dies
  });
  await a.enqueue('q', { id: 'job-1', payload: { n: 1 } });
  await runningOnA;
  a.abandon();

  const b = new EmbeddedJobQueue(file, { pollMs: 20, leaseMs: 60_000 });
  try {
    const ran: number[] = [];
    b.process<{ n: number }>('q', async (job) => {
      ran.push(job.payload.n);
    });
    expect((await b.getJob('q', 'job-1'))?.state).toBe('active');
    await b.takeOverRunning();
    const deadline = Date.now() + 10_000;
    while ((await b.getJob('q', 'job-1'))?.state !== 'completed') {
      if (Date.now() > deadline) throw new Error('the orphaned job did not run again');
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(ran).toEqual([1]);
  } finally {
    await b.close();
  }
});
