import { Redis } from 'ioredis';
import { afterAll } from 'vitest';
import { BullmqJobQueue } from '../../src/gateways/queue/bullmq.js';
import { jobQueueContract } from './queue.contract.js';

const url = process.env.REDIS_TEST_URL ?? 'redis://127.0.0.1:6379';
const run = `cttest-${process.pid}-${Date.now().toString(36)}`;

afterAll(async () => {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${run}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
  await redis.quit();
});

jobQueueContract('BullMQ (Redis)', {
  open: async (name) => new BullmqJobQueue(url, { prefix: `${run}-${name}`, lockDurationMs: 600, stalledIntervalMs: 300 }),
});
