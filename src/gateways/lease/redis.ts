/**
 * The lease in Redis, for deployments whose processes share no DATA_DIR (event store on KurrentDB):
 * `SET key holder NX PX ttl` takes it, a compare-and-extend script renews it, a compare-and-delete
 * script releases it, so only the holder can extend or drop it. A holder that dies loses the
 * lease when its TTL runs out.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Lease } from './port.js';

const RENEW = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";
const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

export class RedisLease implements Lease {
  readonly holder = randomUUID();
  private readonly redis: Redis;
  private readonly key: string;

  constructor(
    url: string,
    name: string,
    private readonly ttlMs: number,
    prefix = 'ct',
  ) {
    // Commands fail rather than wait while Redis is away: a lease that cannot be renewed runs out.
    this.redis = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: true });
    this.redis.on('error', () => {});
    this.key = `${prefix}:lease:${name}`;
  }

  private async up(): Promise<void> {
    if (this.redis.status === 'wait') await this.redis.connect();
  }

  async tryAcquire(): Promise<boolean> {
    await this.up();
    if ((await this.redis.set(this.key, this.holder, 'PX', this.ttlMs, 'NX')) === 'OK') return true;
    // Already ours (a retry after an unanswered SET): extend it.
    return (await this.redis.eval(RENEW, 1, this.key, this.holder, String(this.ttlMs))) === 1;
  }

  async renew(): Promise<boolean> {
    await this.up();
    return (await this.redis.eval(RENEW, 1, this.key, this.holder, String(this.ttlMs))) === 1;
  }

  async release(): Promise<void> {
    await this.up();
    await this.redis.eval(RELEASE, 1, this.key, this.holder).catch(() => {});
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
