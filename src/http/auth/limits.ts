/**
 * What a stranger's guesses may cost others (issue #29 item 7).
 *
 * - The request rate of CONTRACT 8 is per presented credential, counted on arrival before the
 *   password is checked: the key is the username with a fingerprint of the password (a keyed
 *   HMAC, never the password), so a burst of wrong passwords fills the guesser's own buckets, not
 *   the owner's; the operator token likewise.
 * - Failed authentications are counted apart, per (presented username or the operator token, client
 *   address) and per client address whatever it presented (rotating unknown usernames). Past either
 *   limit that address gets 429 for that credential, or for all, until the window ends: the right
 *   password from there too, or a guess that happened to be right would tell itself apart. A
 *   password is counted when its verification starts and refunded when it succeeds, so guesses
 *   sent all at once are bounded too.
 *
 * Counting: rate-limiter-flexible, in Redis with REDIS_URL (one count across every `api` process)
 * or in memory. Whether a key is blocked is read in memory on every request (no store round trip on
 * the hot path): a process learns a block when one of its own failures finds the count over, so
 * another process allows at most one more failure before it refuses too.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { RedisClient } from '../../gateways/redis-client.js';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { AppError } from '../../domain/errors.js';

/** The window of the failure counts. */
export const FAILURE_WINDOW_S = 60;
/** Most blocked keys remembered in memory (oldest dropped first): bounded whatever an attacker sends. */
const MAX_BLOCKED = 100_000;

/**
 * The rate-limit key of a request: the presented Basic credential (username and a fingerprint of
 * the password), the operator token's fingerprint, else the client address. `secret` keys the
 * fingerprints: every `api` process sharing the counters must use the same one.
 */
export function credentialKey(authorization: string | undefined, ip: string, secret: string): string {
  if (authorization?.startsWith('Basic ')) {
    const decoded = Buffer.from(authorization.slice(6).trim(), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon > 0) return `u:${decoded.slice(0, colon)}|${fingerprint(secret, decoded.slice(colon + 1))}`;
  }
  if (authorization?.startsWith('Bearer ')) return `op|${fingerprint(secret, authorization.slice(7).trim())}`;
  return `ip:${ip}`;
}

/** Headers whose key is remembered: a client sends the same one on each request. */
const KEY_CACHE = 10_000;

/**
 * `credentialKey` as every request asks it: the HMAC costs ~7 µs, a remembered header's key a Map
 * read. Least recently used headers are dropped past KEY_CACHE, so the map stays bounded.
 */
export function credentialKeys(secret: string): (authorization: string | undefined, ip: string) => string {
  const cache = new Map<string, string>();
  return (authorization, ip) => {
    if (!authorization) return `ip:${ip}`;
    let key = cache.get(authorization);
    if (key !== undefined) {
      cache.delete(authorization);
    } else {
      key = credentialKey(authorization, ip, secret);
      // A header naming no credential keys by address, which differs per client: not remembered.
      if (key.startsWith('ip:')) return key;
      if (cache.size >= KEY_CACHE) cache.delete(cache.keys().next().value!);
    }
    cache.set(authorization, key);
    return key;
  };
}

function fingerprint(secret: string, value: string): string {
  return createHmac('sha256', secret).update(value).digest('base64url').slice(0, 16);
}

/** The fingerprints' key: derived from the operator token (shared by every process of a deployment). */
export function rateKeySecret(operatorToken: string | undefined): string {
  return operatorToken ? createHash('sha256').update(`rate-limit-key\u0000${operatorToken}`).digest('base64') : randomBytes(32).toString('base64');
}

export interface AuthFailureOptions {
  /** Failed authentications per credential and address in the window; 0 turns this limit off. */
  perCredential: number;
  /** Failed authentications per address in the window, whatever was presented; 0: off. */
  perAddress: number;
  redis?: RedisClient;
  /** Prefix of the Redis keys. */
  prefix?: string;
  now?: () => number;
  /** Where a failure could not be counted (the store is away): the request was answered anyway. */
  onStoreError?: (err: unknown) => void;
}

export class AuthFailureLimiter {
  private readonly byCredential: RateLimiterAbstract | null;
  private readonly byAddress: RateLimiterAbstract | null;
  /** key → when its block ends (ms). */
  private readonly blocked = new Map<string, number>();
  /** Verifications in flight by (address, credential as presented). */
  private readonly flights = new Map<string, Promise<unknown>>();
  private readonly now: () => number;

  constructor(private readonly opts: AuthFailureOptions) {
    this.now = opts.now ?? Date.now;
    const make = (points: number, name: string): RateLimiterAbstract | null => {
      if (points <= 0) return null;
      const keyPrefix = `${opts.prefix ?? 'ct'}:authfail:${name}`;
      return opts.redis
        ? new RateLimiterRedis({ storeClient: opts.redis, points, duration: FAILURE_WINDOW_S, keyPrefix })
        : new RateLimiterMemory({ points, duration: FAILURE_WINDOW_S, keyPrefix });
    };
    this.byCredential = make(opts.perCredential, 'cred');
    this.byAddress = make(opts.perAddress, 'addr');
  }

  get enabled(): boolean {
    return this.byCredential !== null || this.byAddress !== null;
  }

  /**
   * The 429 for a request of `credential` (`u:<username>` or `op`) from `address` while either is
   * blocked, or null to go on. Read in memory: every request asks, a remembered credential too.
   */
  refusal(credential: string, address: string): AppError | null {
    if (!this.enabled || this.blocked.size === 0) return null;
    return refuse(Math.max(this.left(`a|${address}`), this.left(`c|${credential}|${address}`)));
  }

  /**
   * Counts an authentication about to be verified (it is a failure until it succeeds): a burst of
   * guesses sent at once is bounded as well as one after another. The 429 when over a limit.
   */
  async attempt(credential: string, address: string): Promise<AppError | null> {
    if (!this.enabled) return null;
    const [c, a] = await Promise.all([this.count(this.byCredential, `c|${credential}|${address}`), this.count(this.byAddress, `a|${address}`)]);
    return refuse(Math.max(c, a));
  }

  /**
   * Runs `check` (a password's verification) as an attempt: counted first, refunded when it finds
   * the credential right. Identical requests in flight at once (same address, same credential as
   * presented) share one run and count once: a client opening many connections with one right
   * password is one attempt, not a burst of failures.
   */
  verify<T>(credential: string, address: string, presented: string, check: () => Promise<T | null>): Promise<T | AppError | null> {
    const key = `${address}\u0000${presented}`;
    let flight = this.flights.get(key) as Promise<T | AppError | null> | undefined;
    if (!flight) {
      flight = this.verifyOnce(credential, address, check).finally(() => this.flights.delete(key));
      this.flights.set(key, flight);
    }
    return flight;
  }

  private async verifyOnce<T>(credential: string, address: string, check: () => Promise<T | null>): Promise<T | AppError | null> {
    const over = await this.attempt(credential, address);
    if (over) return over;
    const found = await check();
    if (found !== null) void this.succeeded(credential, address);
    return found;
  }

  /** The attempt succeeded: it is no failure. */
  async succeeded(credential: string, address: string): Promise<void> {
    if (!this.enabled) return;
    await Promise.all([this.refund(this.byCredential, `c|${credential}|${address}`), this.refund(this.byAddress, `a|${address}`)]);
  }

  /** Counts one failed authentication checked without `attempt` (the operator token's). */
  async failed(credential: string, address: string): Promise<void> {
    await this.attempt(credential, address);
  }

  private left(key: string): number {
    const until = this.blocked.get(key);
    if (until === undefined) return 0;
    const ms = until - this.now();
    if (ms <= 0) this.blocked.delete(key);
    return ms;
  }

  /** Counts one on `key`: how long it is now blocked (0: not). */
  private async count(limiter: RateLimiterAbstract | null, key: string): Promise<number> {
    if (!limiter) return 0;
    try {
      await limiter.consume(key);
      return 0;
    } catch (res) {
      if (res instanceof RateLimiterRes) return this.block(key, res.msBeforeNext);
      // The store is away: this one goes uncounted, as the request rate does (skipOnError).
      this.opts.onStoreError?.(res);
      return 0;
    }
  }

  private async refund(limiter: RateLimiterAbstract | null, key: string): Promise<void> {
    if (!limiter) return;
    await limiter.reward(key, 1).catch((err: unknown) => this.opts.onStoreError?.(err));
  }

  private block(key: string, ms: number): number {
    const left = Math.max(ms, 1000);
    this.blocked.delete(key);
    this.blocked.set(key, this.now() + left);
    if (this.blocked.size > MAX_BLOCKED) this.blocked.delete(this.blocked.keys().next().value!);
    return left;
  }
}

function refuse(ms: number): AppError | null {
  if (ms <= 0) return null;
  return new AppError('RATE_LIMITED', 'too many failed authentications from this address; try again later', {
    'Retry-After': String(Math.max(1, Math.ceil(ms / 1000))),
  });
}
