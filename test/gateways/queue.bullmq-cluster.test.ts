/**
 * BullMQ on a real three-master Redis Cluster (REDIS_URL=redis+cluster://...): the job queue
 * contract holds, and every key the queues write lies in one hash slot (the prefix's hash tag), so
 * BullMQ's multi-key scripts never meet CROSSSLOT.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from 'ioredis';
import { BullmqJobQueue } from '../../src/gateways/queue/bullmq.js';
import { RedisLease } from '../../src/gateways/lease/redis.js';
import { jobQueueContract } from './queue.contract.js';
import { clusterUnavailable, startRedisCluster, type RedisClusterHandle } from '../support/redis-cluster.js';
import { until } from '../support/until.js';

const missing = await clusterUnavailable();
if (missing && process.env.REQUIRE_REDIS === 'true') throw new Error(`the Redis Cluster test needs redis-server and redis-cli: ${missing}`);

let cluster: RedisClusterHandle | null = null;
const run = `ctc-${process.pid}-${Date.now().toString(36)}`;

if (missing) {
  describe.skip(`BullMQ on Redis Cluster: ${missing}`, () => it('needs redis-server', () => {}));
} else {
  beforeAll(async () => {
    cluster = await startRedisCluster();
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  jobQueueContract('BullMQ (Redis Cluster)', {
    open: async (name) => new BullmqJobQueue(cluster!.url, { prefix: `${run}-${name}`, lockDurationMs: 600, stalledIntervalMs: 300 }),
  });

  describe('the worker lease on a Redis Cluster', () => {
    it('has one holder at a time and a larger fencing token for each new holding (its two keys in one slot)', async () => {
      const a = new RedisLease(cluster!.url, 'worker', 60_000, `${run}-lease`);
      const b = new RedisLease(cluster!.url, 'worker', 60_000, `${run}-lease`);
      try {
        expect(await a.tryAcquire()).toBe(true);
        expect(await b.tryAcquire()).toBe(false);
        const first = a.token!;
        await a.release();
        expect(await b.tryAcquire()).toBe(true);
        expect(b.token!).toBeGreaterThan(first);
        expect(await a.renew()).toBe(false);
        await b.release();
      } finally {
        await a.close();
        await b.close();
      }
    });
  });

  describe('BullMQ keys on a Redis Cluster', () => {
    it('lie in one hash slot for every queue, under the prefix wrapped in a hash tag', async () => {
      const prefix = `${run}-slots`;
      const q = new BullmqJobQueue(cluster!.url, { prefix });
      const seen: string[] = [];
      try {
        for (const queue of ['deliveries', 'sms', 'schedule']) {
          q.process(queue, async (job) => void seen.push(`${queue}/${job.id}`));
          await q.enqueue(queue, { id: 'a', payload: 1 });
          await q.enqueue(queue, { id: 'later', payload: 2, delayMs: 60_000 });
        }
        await until(() => seen.length === 3, 'one job of each queue to run');
      } finally {
        await q.close();
      }
      const redis = new Cluster(cluster!.ports.map((port) => ({ host: '127.0.0.1', port })));
      try {
        // The client knows the nodes once it has the slot map.
        if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
        const keys: string[] = [];
        for (const node of redis.nodes('master')) {
          let cursor = '0';
          do {
            const [next, found] = await node.scan(cursor, 'MATCH', `*${prefix}*`, 'COUNT', 1000);
            cursor = next;
            keys.push(...found);
          } while (cursor !== '0');
        }
        expect(keys.length).toBeGreaterThan(6);
        expect(keys.every((k) => k.startsWith(`{${prefix}}:`)), keys.join(' ')).toBe(true);
        const slots = new Set(await Promise.all(keys.map((k) => redis.cluster('KEYSLOT', k))));
        expect(slots.size).toBe(1);
        await Promise.all(keys.map((k) => redis.del(k)));
      } finally {
        redis.disconnect();
      }
    });
  });
}
