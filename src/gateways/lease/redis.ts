/**
 * The lease in Redis, for deployments whose processes share no DATA_DIR (event store on a server):
 * a script takes it (`SET key holder NX PX ttl`, then `INCR` of the lease's token counter: the
 * fencing token), a compare-and-extend script renews it, a compare-and-delete script releases it,
 * so only the holder can extend or drop it. A holder that dies loses the lease when its TTL runs
 * out. Both keys share a hash slot on a Redis Cluster (the prefix is a hash tag there).
 */
import { randomUUID } from 'node:crypto';
import { keyPrefix, openRedis, type RedisClient } from '../redis-client.js';
import type { Lease } from './port.js';

/** The holding's token: the counter's value (a new holding increments it), or 0 when another holds it. */
const ACQUIRE = `
if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return tonumber(redis.call('get', KEYS[2]) or '0')
end
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.call('incr', KEYS[2]) end
return 0`;
const RENEW = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";
const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

export class RedisLease implements Lease {
  readonly holder = randomUUID();
  token: number | null = null;
  private readonly redis: RedisClient;
  private readonly key: string;
  private readonly tokenKey: string;

  constructor(
    url: string,
    name: string,
    private readonly ttlMs: number,
    prefix = 'ct',
  ) {
    // Commands fail rather than wait while Redis is away: a lease that cannot be renewed runs out.
    this.redis = openRedis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: true });
    this.redis.on('error', () => {});
    this.key = `${keyPrefix(url, prefix)}:lease:${name}`;
    this.tokenKey = `${this.key}:token`;
  }

  private async up(): Promise<void> {
    if (this.redis.status === 'wait') await this.redis.connect();
  }

  async tryAcquire(): Promise<boolean> {
    await this.up();
    // A retry after an unanswered call finds the lease ours and keeps its token.
    const token = Number(await this.redis.eval(ACQUIRE, 2, this.key, this.tokenKey, this.holder, String(this.ttlMs)));
    if (token > 0) this.token = token;
    return token > 0;
  }

  async renew(): Promise<boolean> {
    await this.up();
    return (await this.redis.eval(RENEW, 1, this.key, this.holder, String(this.ttlMs))) === 1;
  }

  async release(): Promise<void> {
    await this.up();
    await this.redis.eval(RELEASE, 1, this.key, this.holder).catch(() => {});
    this.token = null;
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
