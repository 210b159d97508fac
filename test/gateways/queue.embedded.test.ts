import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';
import { EmbeddedJobQueue } from '../../src/gateways/queue/embedded.js';
import { jobQueueContract } from './queue.contract.js';

const dir = mkdtempSync(path.join(tmpdir(), 'ct-queue-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

jobQueueContract('embedded (SQLite)', {
  open: async (name) => new EmbeddedJobQueue(path.join(dir, `${name}.db`), { pollMs: 20, leaseMs: 300 }),
});
