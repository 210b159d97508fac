import { availableParallelism } from 'node:os';
/** The one place environment variables are read (CONTRACT section 1). */
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import path from 'node:path';
import { kurrentDbUrlProblem, mongoDbUrlProblem, parseRedisUrl } from './gateways/connection-strings.js';

export type Role = 'api' | 'socket' | 'worker' | 'projector';
const ALL_ROLES: Role[] = ['api', 'socket', 'worker', 'projector'];

export interface Config {
  host: string;
  port: number;
  socketPort: number;
  /** Not in the contract's table: most event socket connections from one remote address (SOCKET_MAX_PER_ADDRESS). */
  socketMaxPerAddress: number;
  dataDir: string;
  eventStoreUrl?: string;
  mongodbUrl?: string;
  /** PostgreSQL: the event log and the read models not named by EVENTSTORE_URL / MONGODB_URL, and the worker lease. */
  databaseUrl?: string;
  redisUrl?: string;
  /** Not in the contract's table: prefix of every Redis key (queues, lease, rate limits), so deployments can share a Redis. */
  redisPrefix: string;
  /** Not in the contract's table: a process without the `api` role serves /healthz and /readyz on this port (unset: none). */
  healthPort?: number;
  roles: Set<Role>;
  operatorToken: string;
  /** true when the operator token was generated, so main prints it once. */
  operatorTokenGenerated: boolean;
  provisionFile?: string;
  publicBaseUrl: string;
  /** false when PUBLIC_BASE_URL was derived from HOST and PORT (then the bound port is used). */
  publicBaseUrlSet: boolean;
  simAnswerMs: number;
  simRingTimeoutMs: number;
  simTalkMs: number;
  webhookRetryMs: number[];
  webhookTimeoutMs: number;
  webhookAllowPrivate: boolean;
  otpTtlS: number;
  otpMaxAttempts: number;
  otpSendsPer15Min: number;
  dialerMaxTries: number;
  dialerRetryS: number;
  rateLimitRps: number;
  /** Not in the contract's table: failed authentications a minute per presented credential and client address (0: off). */
  authFailuresPerMin: number;
  /** Not in the contract's table: failed authentications a minute per client address, whatever was presented (0: off). */
  authFailuresPerAddressPerMin: number;
  /**
   * Not in the contract's table: fastify's `trustProxy` (TRUST_PROXY): which proxies' X-Forwarded-For
   * gives the client address. false, true (any), or proxy addresses and CIDRs.
   */
  trustProxy: boolean | string;
  /** Time a client has to send a whole request, headers and body (then 408 and the connection closed). */
  requestTimeoutMs: number;
  /** Not in the contract's table: wait between tries of an SMS (`tries` > 1). */
  smsRetryMs: number;
  /** Not in the contract's table: wait before a missed scheduled call's next attempt (CONTRACT section 10 says 60 s). */
  scheduleRetryS: number;
  /** Not in the contract's table: comment line interval of GET /api/v1/events (CONTRACT section 13 says 15 s). */
  liveHeartbeatMs: number;
  logLevel: string;
  /**
   * Not in the contract's table: the embedded stores' writes (event log, read models, analytics,
   * job queue) on threads of their own (EMBEDDED_THREADS on, off, or auto: on with 4 cores or more).
   */
  embeddedThreads: boolean;
  /** The switch behind calls (CONTRACT section 16): the simulator, or SIP. */
  switch: SwitchConfig;
}

export type SwitchConfig =
  | { kind: 'sim' }
  | { kind: 'sip'; host: string; port: number; domain: string; trunk: { transport: 'udp' | 'tcp'; host: string; port: number }; ringTimeoutMs: number };

type Env = Record<string, string | undefined>;

/** A setting that cannot be used: main.ts and the CLI print its message as one line and exit 2. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function int(env: Env, name: string, dflt: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a non-negative integer, got "${raw}"`);
  const n = Number(raw.trim());
  if (n < min) throw new ConfigError(`${name} must be at least ${min}`);
  return n;
}

function port(env: Env, name: string, dflt: number): number {
  const n = int(env, name, dflt);
  if (n > 65535) throw new ConfigError(`${name} must be a port number from 0 to 65535, got "${env[name]}"`);
  return n;
}

function url(env: Env, name: string, schemes: string[]): string | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  let scheme: string;
  try {
    scheme = new URL(raw).protocol.replace(/:$/, '');
  } catch {
    throw new ConfigError(`${name} must be a URL (${schemes.map((s) => `${s}://`).join(' or ')}...), got "${redact(raw)}"`);
  }
  if (!schemes.includes(scheme)) throw new ConfigError(`${name} must start with ${schemes.map((s) => `${s}://`).join(' or ')}, got "${scheme}://..."`);
  return raw;
}

/** A URL as it may be shown: without its password. */
function redact(raw: string): string {
  return raw.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@');
}

/**
 * A server's connection string as its driver takes it (multi-host forms included), checked by the
 * driver's own parser (gateways/connection-strings.ts); the message names the variable and never
 * shows the password, even where the driver's own message quotes part of the string.
 */
function connectionString(env: Env, name: string, problem: (raw: string) => string | null): string | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  const why = problem(raw);
  if (why === null) return raw;
  const password = /\/\/[^:/@]*:([^@/]*)@/.exec(raw)?.[1];
  const said = (password ? why.split(password).join('***') : why).split('\n')[0]!.replace(/\.$/, '');
  throw new ConfigError(`${name} is not a connection string its driver takes (${said}), got "${redact(raw)}"`);
}

const redisProblem = (raw: string): string | null => {
  try {
    parseRedisUrl(raw);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
};

function bool(env: Env, name: string, dflt: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  if (/^(true|1)$/i.test(raw)) return true;
  if (/^(false|0)$/i.test(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

const PROXY_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/**
 * TRUST_PROXY: false (default), true, or a comma-separated list of proxy addresses and CIDRs. No hop
 * count: fastify trusts none with one, as it cannot tell the nearest peer is a proxy.
 */
function trustProxy(env: Env): boolean | string {
  const raw = (env.TRUST_PROXY ?? '').trim();
  if (raw === '' || /^(false|0)$/i.test(raw)) return false;
  if (/^(true|1)$/i.test(raw)) return true;
  const items = raw.split(',').map((x) => x.trim());
  for (const item of items) {
    const [addr, bits, extra] = item.split('/');
    const ok = PROXY_NAMES.includes(item) || (isIP(addr ?? '') !== 0 && extra === undefined && (bits === undefined || /^\d{1,3}$/.test(bits)));
    if (!ok) throw new ConfigError(`TRUST_PROXY must be true, false or a comma-separated list of proxy addresses or CIDRs (or ${PROXY_NAMES.join(', ')}), got "${raw}"`);
  }
  return items.join(',');
}

function intList(env: Env, name: string, dflt: number[]): number[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return dflt;
  return raw.split(',').map((s) => {
    if (!/^\d+$/.test(s.trim())) throw new ConfigError(`${name} must be a comma-separated list of integers`);
    return Number(s.trim());
  });
}

function redisPrefix(env: Env): string {
  const raw = env.REDIS_PREFIX?.trim() || 'ct';
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(raw)) throw new ConfigError(`REDIS_PREFIX must be 1 to 64 letters, digits, '.', '_' or '-', got "${raw}"`);
  return raw;
}

/**
 * The threads move work off the platform thread but cost CPU of their own (messages, wake-ups, the
 * analytics thread decoding the log again): with 2 cores, shared with the clients or a load
 * generator, they were as fast or slower (measured: docs/benchmarks.md); from 4 they pay.
 */
function embeddedThreads(env: Env): boolean {
  const raw = (env.EMBEDDED_THREADS || 'auto').trim().toLowerCase();
  // true/false and 1/0 as well, as every other switch of the configuration takes them.
  if (raw === 'on' || raw === 'true' || raw === '1') return true;
  if (raw === 'off' || raw === 'false' || raw === '0') return false;
  if (raw !== 'auto') throw new ConfigError(`EMBEDDED_THREADS must be on, off or auto (or true, false), got "${env.EMBEDDED_THREADS}"`);
  return availableParallelism() >= 4;
}

function logLevel(env: Env): string {
  const level = (env.LOG_LEVEL || 'info').trim().toLowerCase();
  if (!LOG_LEVELS.includes(level)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${env.LOG_LEVEL}"`);
  return level;
}

export function loadConfig(env: Env = process.env): Config {
  const host = env.HOST || '127.0.0.1';
  const httpPort = port(env, 'PORT', 8080);
  const rolesRaw = env.ROLES?.trim();
  const roles = new Set<Role>();
  for (const r of rolesRaw ? rolesRaw.split(',') : ALL_ROLES) {
    const role = r.trim() as Role;
    if (!ALL_ROLES.includes(role)) throw new ConfigError(`ROLES: unknown role "${r}" (known: ${ALL_ROLES.join(', ')})`);
    roles.add(role);
  }
  const operatorTokenGenerated = !env.OPERATOR_TOKEN;
  return {
    host,
    port: httpPort,
    socketPort: port(env, 'SOCKET_PORT', 8989),
    socketMaxPerAddress: int(env, 'SOCKET_MAX_PER_ADDRESS', 1024, 1),
    dataDir: path.resolve(env.DATA_DIR || './data'),
    eventStoreUrl: connectionString(env, 'EVENTSTORE_URL', kurrentDbUrlProblem),
    mongodbUrl: connectionString(env, 'MONGODB_URL', mongoDbUrlProblem),
    // pg takes one host: a URL is what it parses.
    databaseUrl: url(env, 'DATABASE_URL', ['postgres', 'postgresql']),
    redisUrl: connectionString(env, 'REDIS_URL', redisProblem),
    redisPrefix: redisPrefix(env),
    healthPort: env.HEALTH_PORT?.trim() ? port(env, 'HEALTH_PORT', 0) : undefined,
    roles,
    operatorToken: env.OPERATOR_TOKEN || randomBytes(24).toString('base64url'),
    operatorTokenGenerated,
    provisionFile: env.PROVISION_FILE || undefined,
    publicBaseUrl: (url(env, 'PUBLIC_BASE_URL', ['http', 'https']) || `http://${host.includes(':') ? `[${host}]` : host}:${httpPort}`).replace(/\/+$/, ''),
    simAnswerMs: int(env, 'SIM_ANSWER_MS', 200),
    simRingTimeoutMs: int(env, 'SIM_RING_TIMEOUT_MS', 30000),
    simTalkMs: int(env, 'SIM_TALK_MS', 0),
    webhookRetryMs: intList(env, 'WEBHOOK_RETRY_MS', [1000, 5000, 30000, 120000, 600000, 3600000]),
    webhookTimeoutMs: int(env, 'WEBHOOK_TIMEOUT_MS', 5000, 1),
    webhookAllowPrivate: bool(env, 'WEBHOOK_ALLOW_PRIVATE', false),
    otpTtlS: int(env, 'OTP_TTL_S', 300, 1),
    otpMaxAttempts: int(env, 'OTP_MAX_ATTEMPTS', 5, 1),
    otpSendsPer15Min: int(env, 'OTP_SENDS_PER_15MIN', 5, 1),
    dialerMaxTries: int(env, 'DIALER_MAX_TRIES', 2, 1),
    dialerRetryS: int(env, 'DIALER_RETRY_S', 60),
    rateLimitRps: int(env, 'RATE_LIMIT_RPS', 100),
    authFailuresPerMin: int(env, 'AUTH_FAILURES_PER_MIN', 10),
    authFailuresPerAddressPerMin: int(env, 'AUTH_FAILURES_PER_ADDRESS_PER_MIN', 30),
    trustProxy: trustProxy(env),
    requestTimeoutMs: int(env, 'REQUEST_TIMEOUT_MS', 60000, 1),
    smsRetryMs: int(env, 'SMS_RETRY_MS', 2000),
    scheduleRetryS: int(env, 'SCHEDULE_RETRY_S', 60),
    publicBaseUrlSet: Boolean(env.PUBLIC_BASE_URL),
    liveHeartbeatMs: int(env, 'SSE_HEARTBEAT_MS', 15_000, 10),
    embeddedThreads: embeddedThreads(env),
    logLevel: logLevel(env),
    switch: switchConfig(env, host),
  };
}

/** SWITCH, SIP_HOST, SIP_PORT, SIP_DOMAIN, SIP_TRUNK, SIP_RING_TIMEOUT_MS (CONTRACT section 16). */
function switchConfig(env: Env, host: string): SwitchConfig {
  const kind = (env.SWITCH || 'sim').trim().toLowerCase();
  if (kind === 'sim') return { kind: 'sim' };
  if (kind !== 'sip') throw new ConfigError(`SWITCH must be sim or sip, got "${env.SWITCH}"`);
  const sipHost = env.SIP_HOST?.trim() || host;
  const raw = env.SIP_TRUNK?.trim();
  if (!raw) throw new ConfigError('SIP_TRUNK is required with SWITCH=sip: host:port of the carrier or SBC (optionally ;transport=tcp)');
  const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+)(?::(\d{1,5}))?(?:;transport=(udp|tcp))?$/i.exec(raw);
  const trunkPort = m?.[2] === undefined ? 5060 : Number(m[2]);
  if (!m || trunkPort < 1 || trunkPort > 65535) throw new ConfigError(`SIP_TRUNK must be host:port, optionally followed by ;transport=tcp, got "${raw}"`);
  return {
    kind: 'sip',
    host: sipHost,
    port: port(env, 'SIP_PORT', 5060),
    domain: env.SIP_DOMAIN?.trim() || sipHost,
    trunk: { transport: m[3]?.toLowerCase() === 'tcp' ? 'tcp' : 'udp', host: m[1]!.replace(/^\[(.*)\]$/, '$1'), port: trunkPort },
    ringTimeoutMs: int(env, 'SIP_RING_TIMEOUT_MS', 30000, 1),
  };
}
