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
  redisUrl?: string;
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
}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, dflt: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  if (!/^\d+$/.test(raw.trim())) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  const n = Number(raw.trim());
  if (n < min) throw new Error(`${name} must be at least ${min}`);
  return n;
}

function bool(env: Env, name: string, dflt: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  if (/^(true|1)$/i.test(raw)) return true;
  if (/^(false|0)$/i.test(raw)) return false;
  throw new Error(`${name} must be true or false, got "${raw}"`);
}

function intList(env: Env, name: string, dflt: number[]): number[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return dflt;
  return raw.split(',').map((s) => {
    if (!/^\d+$/.test(s.trim())) throw new Error(`${name} must be a comma-separated list of integers`);
    return Number(s.trim());
  });
}

export function loadConfig(env: Env = process.env): Config {
  const host = env.HOST || '127.0.0.1';
  const port = int(env, 'PORT', 8080);
  const rolesRaw = env.ROLES?.trim();
  const roles = new Set<Role>();
  for (const r of rolesRaw ? rolesRaw.split(',') : ALL_ROLES) {
    const role = r.trim() as Role;
    if (!ALL_ROLES.includes(role)) throw new Error(`ROLES: unknown role "${r}" (known: ${ALL_ROLES.join(', ')})`);
    roles.add(role);
  }
  const operatorTokenGenerated = !env.OPERATOR_TOKEN;
  return {
    host,
    port,
    socketPort: int(env, 'SOCKET_PORT', 8989),
    dataDir: path.resolve(env.DATA_DIR || './data'),
    eventStoreUrl: env.EVENTSTORE_URL || undefined,
    mongodbUrl: env.MONGODB_URL || undefined,
    redisUrl: env.REDIS_URL || undefined,
    roles,
    operatorToken: env.OPERATOR_TOKEN || randomBytes(24).toString('base64url'),
    operatorTokenGenerated,
    provisionFile: env.PROVISION_FILE || undefined,
    publicBaseUrl: (env.PUBLIC_BASE_URL || `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(/\/+$/, ''),
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
    logLevel: env.LOG_LEVEL || 'info',
  };
}
