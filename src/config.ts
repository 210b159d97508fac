import { availableParallelism } from 'node:os';
/** The one place environment variables are read (CONTRACT section 1). */
import { randomBytes } from 'node:crypto';
import path from 'node:path';

export type Role = 'api' | 'socket' | 'worker' | 'projector';
const ALL_ROLES: Role[] = ['api', 'socket', 'worker', 'projector'];

export interface Config {
  host: string;
  port: number;
  socketPort: number;
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
}

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

function bool(env: Env, name: string, dflt: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  if (/^(true|1)$/i.test(raw)) return true;
  if (/^(false|0)$/i.test(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
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
 * generator, they were as fast or slower (measured: README, "Benchmarks"); from 4 they pay.
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
    dataDir: path.resolve(env.DATA_DIR || './data'),
    eventStoreUrl: url(env, 'EVENTSTORE_URL', ['esdb', 'esdb+discover', 'kurrentdb', 'kurrentdb+discover', 'kurrent', 'kurrent+discover']),
    mongodbUrl: url(env, 'MONGODB_URL', ['mongodb', 'mongodb+srv']),
    databaseUrl: url(env, 'DATABASE_URL', ['postgres', 'postgresql']),
    redisUrl: url(env, 'REDIS_URL', ['redis', 'rediss']),
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
    smsRetryMs: int(env, 'SMS_RETRY_MS', 2000),
    scheduleRetryS: int(env, 'SCHEDULE_RETRY_S', 60),
    publicBaseUrlSet: Boolean(env.PUBLIC_BASE_URL),
    liveHeartbeatMs: int(env, 'SSE_HEARTBEAT_MS', 15_000, 10),
    embeddedThreads: embeddedThreads(env),
    logLevel: logLevel(env),
  };
}
