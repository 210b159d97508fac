/**
 * vitest globalSetup: is there a Redis for the BullMQ suites? Asked once, within about a second, so a
 * machine without Redis hears it at the start of `npm test` instead of two suites hanging for minutes.
 * Without Redis those suites are skipped with a loud notice; where REQUIRE_REDIS=true (CI) the run
 * fails at once instead.
 */
import { Redis } from 'ioredis';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The Redis the BullMQ suites use, or null when none answered (they are skipped). */
    redisUrl: string | null;
  }
}

export async function redisAnswers(url: string, timeoutMs = 1500): Promise<boolean> {
  const redis = new Redis(url, { lazyConnect: true, connectTimeout: timeoutMs, commandTimeout: timeoutMs, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => {});
  // One deadline for the whole probe: a port that accepts and never answers must not hang the run.
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
  try {
    return await Promise.race([
      deadline,
      redis
        .connect()
        .then(async () => (await redis.ping()) === 'PONG')
        .catch(() => false),
    ]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
    redis.disconnect();
  }
}

export default async function setup(project: TestProject) {
  const url = process.env.REDIS_TEST_URL ?? 'redis://127.0.0.1:6379';
  const ok = await redisAnswers(url);
  if (!ok) {
    const where = url.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@');
    const how = 'start one (e.g. `redis-server --daemonize yes`, or `docker run -d -p 6379:6379 redis:7`) or set REDIS_TEST_URL';
    if (process.env.REQUIRE_REDIS === 'true') throw new Error(`No Redis answers at ${where}, and REQUIRE_REDIS=true: ${how}.`);
    const bar = '!'.repeat(78);
    process.stderr.write(`\n${bar}\n!! No Redis answers at ${where}: the BullMQ (REDIS_URL) suites are SKIPPED.\n!! To run them, ${how}.\n${bar}\n\n`);
  }
  project.provide('redisUrl', ok ? url : null);
}
