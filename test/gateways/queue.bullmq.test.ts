import { dropRedisKeys } from '../support/redis-keys.js';
import { afterAll, describe, inject, it } from 'vitest';
import { BullmqJobQueue } from '../../src/gateways/queue/bullmq.js';
import { jobQueueContract } from './queue.contract.js';

// null when no Redis answered at the start of the run (test/support/redis-global.ts): skipped.
const url = inject('redisUrl');
const run = `cttest-${process.pid}-${Date.now().toString(36)}`;

if (url === null) describe.skip('BullMQ (Redis): no Redis answers', () => it('needs Redis', () => {}));
else afterAll(async () => {
  await dropRedisKeys(url, `${run}*`);
});

if (url !== null) jobQueueContract('BullMQ (Redis)', {
  open: async (name) => new BullmqJobQueue(url, { prefix: `${run}-${name}`, lockDurationMs: 600, stalledIntervalMs: 300 }),
});
