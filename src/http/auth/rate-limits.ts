/**
 * The request rate limit of CONTRACT 8 (per presented credential, counted on arrival) and the
 * failed-authentication limits (./limits.ts), registered on the app. With REDIS_URL both count in
 * Redis, one count across every `api` process.
 */
import type { FastifyInstance } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import { keyPrefix, openRedis } from '../../gateways/redis-client.js';
import type { Context } from '../../context.js';
import { AppError } from '../../domain/errors.js';
import { AuthFailureLimiter, credentialKeys, rateKeySecret } from './limits.js';

export async function registerLimits(app: FastifyInstance, ctx: Context): Promise<AuthFailureLimiter> {
  const { config } = ctx;
  const failuresOn = config.authFailuresPerMin > 0 || config.authFailuresPerAddressPerMin > 0;
  // Commands fail at once while Redis is away, and then the request is let through (skipOnError):
  // an outage of the counter store must not take the API down with it.
  const redis =
    config.redisUrl && (config.rateLimitRps > 0 || failuresOn)
      ? openRedis(config.redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2000, commandTimeout: 2000 })
      : undefined;
  const prefix = config.redisUrl ? keyPrefix(config.redisUrl, config.redisPrefix) : config.redisPrefix;
  if (redis) {
    redis.on('error', (err) => ctx.logger.debug({ err: String(err) }, 'rate limit: redis error'));
    app.addHook('onClose', async () => {
      await redis.quit().catch(() => redis.disconnect());
    });
  }
  if (config.rateLimitRps > 0) {
    const keyOf = credentialKeys(rateKeySecret(config.operatorToken));
    await app.register(rateLimit, {
      global: true,
      ...(redis ? { redis, nameSpace: `${prefix}:rate:`, skipOnError: true } : {}),
      max: config.rateLimitRps,
      timeWindow: 1000,
      keyGenerator: (req) => keyOf(req.headers.authorization, req.ip),
      errorResponseBuilder: (_req, c) => new AppError('RATE_LIMITED', `more than ${c.max} requests a second`, { 'Retry-After': String(Math.max(1, Math.ceil(c.ttl / 1000))) }),
    });
  }
  return new AuthFailureLimiter({
    perCredential: config.authFailuresPerMin,
    perAddress: config.authFailuresPerAddressPerMin,
    redis,
    prefix,
    onStoreError: (err) => ctx.logger.debug({ err: String(err) }, 'auth failure limit: store error'),
  });
}
