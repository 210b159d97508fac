/**
 * One way to open Redis for every adapter (job queue, lease, rate limits): a single server for
 * `redis://` / `rediss://`, an ioredis Cluster for `redis+cluster://host:port,...` (seed nodes;
 * the client finds the rest and follows MOVED/ASK). On a cluster every multi-key command and
 * script must name keys of one hash slot: `keyPrefix` gives the prefix to build keys under, wrapped
 * in a hash tag there (`{ct}`), so every key of every queue and the lease share one slot.
 */
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { parseRedisUrl } from './connection-strings.js';

export type RedisClient = Redis | Cluster;

export function openRedis(url: string, options: RedisOptions = {}): RedisClient {
  const target = parseRedisUrl(url);
  if (!target.cluster) return new Redis(url, options);
  const { lazyConnect, enableOfflineQueue, ...nodeOptions } = options;
  return new Cluster(target.nodes, {
    lazyConnect,
    enableOfflineQueue,
    enableReadyCheck: true,
    redisOptions: {
      ...nodeOptions,
      username: target.username,
      password: target.password,
      ...(target.tls ? { tls: {} } : {}),
    },
  });
}

/** The key prefix on this Redis: as given on one server, a hash tag on a cluster (one slot for all). */
export function keyPrefix(url: string, prefix: string): string {
  return parseRedisUrl(url).cluster ? `{${prefix}}` : prefix;
}
