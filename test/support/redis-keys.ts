/** Test clean-up: deletes every key of a Redis matching `pattern` (SCAN, not KEYS: the server stays responsive). */
import { Redis } from 'ioredis';

export async function dropRedisKeys(url: string, pattern: string): Promise<void> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
