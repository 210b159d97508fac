/**
 * Outbound HTTP for deliveries: one POST, within a time limit, to an address the guard allows.
 * Redirects are not followed (a 3xx is an unsuccessful answer). The response body is read and
 * dropped (up to 64 KiB, so a slow endless body cannot hold the attempt past its limit).
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { guardedLookup, isBlockedAddress, RefusedTargetError } from './address-guard.js';
import { signedHeaders } from './signing.js';

export interface PostOptions {
  timeoutMs: number;
  allowPrivate: boolean;
  headers?: Record<string, string>;
  /**
   * Signs the body (Standard Webhooks headers, signing.ts) where the POST is made: on the poster's
   * thread (threaded.ts) the HMAC is off the platform thread.
   */
  sign?: { secret: string; id: string; timestampS: number };
}

/**
 * No connection to the receiver came free within the time limit (its pool's connections all busy):
 * nothing was sent. Known by its name too, as the poster's thread hands errors back as name and message.
 */
export class ReceiverBusyError extends Error {
  constructor(timeoutMs: number) {
    super(`receiver busy: no connection to it came free within ${timeoutMs} ms`);
    this.name = 'ReceiverBusyError';
  }
}

export const isReceiverBusy = (err: unknown): boolean => err instanceof Error && err.name === 'ReceiverBusyError';

/** The receiver answered (any status). Network errors, timeouts and refusals throw instead. */
export interface PostResult {
  statusCode: number;
}

export type HttpPoster = (url: string, body: string, options: PostOptions) => Promise<PostResult>;

/**
 * Keep-alive pools: deliveries to one receiver reuse connections instead of a TCP (and TLS) handshake
 * each. A pooled socket's address was checked by the guarded lookup when it connected; the pools are
 * kept apart by `allowPrivate`, so a socket allowed by one setting never serves the other.
 */
/**
 * Connections to one receiver at once. POSTs beyond them wait in the pool, on the thread that posts,
 * and take a connection the moment one is free (ReceiverBusyError when none is within the time limit).
 */
export const CONNECTIONS_PER_RECEIVER = 64;
// As many idle sockets kept as may be busy: with fewer, a busy receiver's connections beyond them
// were closed after each answer and opened again for the next.
const poolOptions = { keepAlive: true, maxSockets: CONNECTIONS_PER_RECEIVER, maxFreeSockets: CONNECTIONS_PER_RECEIVER, timeout: 30_000 };
const pools = {
  http: [new http.Agent(poolOptions), new http.Agent(poolOptions)],
  https: [new https.Agent(poolOptions), new https.Agent(poolOptions)],
};
const poolFor = (protocol: string, allowPrivate: boolean) => pools[protocol === 'https:' ? 'https' : 'http'][allowPrivate ? 1 : 0]!;

/** A URL as http.request takes it, parsed once per URL (a receiver gets many deliveries). */
interface Target {
  protocol: string;
  hostname: string;
  /** Without brackets: what an IP literal check reads. */
  host: string;
  port: string;
  path: string;
  /** user:password of the URL, as http.request's `auth` (what it takes from a URL object itself). */
  auth?: string;
}
const targets = new Map<string, Target | Error>();
const TARGETS_MAX = 10_000;

function targetOf(url: string): Target | Error {
  let t = targets.get(url);
  if (t) return t;
  try {
    const u = new URL(url);
    t =
      u.protocol !== 'http:' && u.protocol !== 'https:'
        ? new Error(`unsupported URL scheme ${u.protocol} (http or https only)`)
        : {
            protocol: u.protocol,
            hostname: u.hostname,
            host: u.hostname.replace(/^\[|\]$/g, ''),
            port: u.port,
            path: `${u.pathname}${u.search}`,
            ...(u.username || u.password ? { auth: `${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}` } : {}),
          };
  } catch {
    t = new Error(`invalid URL: ${url}`);
  }
  if (targets.size >= TARGETS_MAX) targets.delete(targets.keys().next().value!);
  targets.set(url, t);
  return t;
}

export const postJson: HttpPoster = (url, body, options) =>
  new Promise<PostResult>((resolve, reject) => {
    const target = targetOf(url);
    if (target instanceof Error) return reject(new Error(target.message));
    const host = target.host;
    // An IP literal is connected to without a lookup, so it is checked here.
    if (net.isIP(host) && !options.allowPrivate && isBlockedAddress(host)) return reject(new RefusedTargetError(host, host));
    const lib = target.protocol === 'https:' ? https : http;
    const payload = Buffer.from(body, 'utf8');
    let settled = false;
    const finish = (err: Error | null, result?: PostResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(result!);
    };
    const req = lib.request(
      {
        protocol: target.protocol,
        hostname: target.host,
        port: target.port,
        path: target.path,
        auth: target.auth,
        method: 'POST',
        lookup: guardedLookup(options.allowPrivate) as never,
        agent: poolFor(target.protocol, options.allowPrivate),
        headers: {
          'content-type': 'application/json',
          'content-length': String(payload.length),
          'user-agent': 'cloud-telephony-webhooks/1',
          ...options.headers,
          ...(options.sign ? signedHeaders(options.sign.secret, options.sign.id, options.sign.timestampS, body) : undefined),
        },
      },
      (res) => {
        let seen = 0;
        res.on('data', (chunk: Buffer) => {
          seen += chunk.length;
          if (seen > 64 * 1024) {
            res.destroy();
            finish(null, { statusCode: res.statusCode ?? 0 });
          }
        });
        res.on('end', () => finish(null, { statusCode: res.statusCode ?? 0 }));
        res.on('error', (err) => finish(err));
      },
    );
    // First the wait for a connection, then the attempt itself: each within the time limit.
    const fail = (err: Error) => () => {
      req.destroy(err);
      finish(err);
    };
    let timer = setTimeout(fail(new ReceiverBusyError(options.timeoutMs)), options.timeoutMs);
    req.once('socket', () => {
      clearTimeout(timer);
      if (!settled) timer = setTimeout(fail(new Error(`timed out after ${options.timeoutMs} ms`)), options.timeoutMs);
    });
    req.on('error', (err) => finish(err));
    req.end(payload);
  });
