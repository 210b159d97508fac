import { Redis } from 'ioredis';
import { afterAll, describe, inject, it } from 'vitest';
import { BullmqJobQueue } from '../../src/gateways/queue/bullmq.js';
import { jobQueueContract } from './queue.contract.js';

// null when no Redis answered at the start of the run (test/support/redis-global.ts): skipped.
const url = inject('redisUrl');
const run = `cttest-${process.pid}-${Date.now().toString(36)}`;

if (url === null) describe.skip('BullMQ (Redis): no Redis answers', () => it('needs Redis', () => {}));
else afterAll(async () => {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${run}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
  await redis.quit();
});

if (url !== null) jobQueueContract('BullMQ (Redis)', {
  open: async (name) => new BullmqJobQueue(url, { prefix: `${run}-${name}`, lockDurationMs: 600, stalledIntervalMs: 300 }),
});
