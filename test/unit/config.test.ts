/** Settings (src/config.ts): defaults of CONTRACT section 1, and a ConfigError naming the setting for a bad one. */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { startupProblem } from '../../src/startup.js';

const refused = (env: Record<string, string>) => {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(env)}`);
};

describe('loadConfig', () => {
  it('has the contract defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({ host: '127.0.0.1', port: 8080, socketPort: 8989, webhookAllowPrivate: false, rateLimitRps: 100, logLevel: 'info', otpTtlS: 300 });
    expect(c.operatorTokenGenerated).toBe(true);
    expect(c.operatorToken).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(c.publicBaseUrl).toBe('http://127.0.0.1:8080');
  });

  it('runs the embedded stores on threads when told, or (auto) with 4 cores or more', async () => {
    expect(loadConfig({ EMBEDDED_THREADS: 'on' }).embeddedThreads).toBe(true);
    expect(loadConfig({ EMBEDDED_THREADS: 'OFF' }).embeddedThreads).toBe(false);
    expect(loadConfig({ EMBEDDED_THREADS: 'true' }).embeddedThreads).toBe(true);
    expect(loadConfig({ EMBEDDED_THREADS: '0' }).embeddedThreads).toBe(false);
    const { availableParallelism } = await import('node:os');
    expect(loadConfig({}).embeddedThreads).toBe(availableParallelism() >= 4);
  });

  it('refuses a bad setting with one line naming it and what it takes', () => {
    expect(refused({ PORT: 'eighty' })).toBe('PORT must be a non-negative integer, got "eighty"');
    expect(refused({ SOCKET_PORT: '70000' })).toMatch(/^SOCKET_PORT must be a port number/);
    expect(refused({ WEBHOOK_ALLOW_PRIVATE: 'yes please' })).toMatch(/^WEBHOOK_ALLOW_PRIVATE must be true or false/);
    expect(refused({ LOG_LEVEL: 'loud' })).toMatch(/^LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent/);
    expect(refused({ ROLES: 'api,web' })).toMatch(/^ROLES: unknown role "web"/);
    expect(refused({ WEBHOOK_RETRY_MS: '1000,soon' })).toMatch(/^WEBHOOK_RETRY_MS must be a comma-separated list/);
    expect(refused({ REDIS_URL: 'localhost:6379' })).toMatch(/^REDIS_URL is not a connection string its driver takes \(must be redis:\/\/host:port/);
    expect(refused({ PUBLIC_BASE_URL: 'example.com' })).toMatch(/^PUBLIC_BASE_URL must/);
    expect(refused({ EMBEDDED_THREADS: 'yes' })).toBe('EMBEDDED_THREADS must be on, off or auto (or true, false), got "yes"');
    for (const m of [refused({ OTP_TTL_S: '0' }), refused({ PORT: '-1' })]) expect(m.split('\n')).toHaveLength(1);
  });

  it('never shows a password of a URL in its message', () => {
    const m = refused({ MONGODB_URL: 'mongo://admin:hunter2@db:27017' });
    expect(m).not.toContain('hunter2');
    const n = refused({ MONGODB_URL: 'mongodb//admin:hunter2@db' });
    expect(n).not.toContain('hunter2');
  });

  it('accepts good URLs and levels in any case', () => {
    const c = loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379', LOG_LEVEL: 'DEBUG', PUBLIC_BASE_URL: 'https://tel.example.com/' });
    expect(c.redisUrl).toBe('redis://127.0.0.1:6379');
    expect(c.logLevel).toBe('debug');
    expect(c.publicBaseUrl).toBe('https://tel.example.com');
  });

  it("takes every multi-host form the drivers take, and refuses a malformed one naming the variable (the drivers' parsers)", () => {
    const good = {
      EVENTSTORE_URL: [
        'kurrentdb+discover://a:2113,b:2113,c:2113',
        'kurrentdb://admin:changeit@a:2113,b:2113,c:2113?tls=false&nodePreference=leader',
        'kdb://db.internal:2113?tls=false',
        'kdb+discover://cluster.internal:2113',
        'esdb://localhost:2113?tls=false',
        'esdb+discover://a:2113,b:2113',
      ],
      MONGODB_URL: ['mongodb://a,b,c/?replicaSet=rs0', 'mongodb://u:p@a:27017,b:27018/telephony?replicaSet=rs0&w=majority', 'mongodb+srv://u:p@cluster0.example.net/telephony'],
      REDIS_URL: ['redis://127.0.0.1:6379', 'rediss://:pw@cache:6380/2', 'redis+cluster://a:7000,b:7001,c:7002', 'rediss+cluster://u:pw@[::1]:7000'],
    };
    for (const [name, urls] of Object.entries(good)) for (const u of urls) expect(() => loadConfig({ [name]: u }), u).not.toThrow();
    expect(loadConfig({ EVENTSTORE_URL: good.EVENTSTORE_URL[0]! }).eventStoreUrl).toBe('kurrentdb+discover://a:2113,b:2113,c:2113');
    const bad: [string, string, RegExp][] = [
      ['EVENTSTORE_URL', 'kurrentdb://a:x', /port number/],
      ['EVENTSTORE_URL', 'kurrentdb://a:2113?tls=maybe', /true or false/],
      ['EVENTSTORE_URL', 'kurrentdb://admin:hunter2@', /host/],
      ['EVENTSTORE_URL', 'http://a:2113', /must start with kurrentdb:\/\//],
      ['MONGODB_URL', 'mongodb+srv://a,b/x', /multiple service names/],
      ['MONGODB_URL', 'mongodb://admin:hunter2@a:x', /parse/],
      ['MONGODB_URL', 'mongodb://', /host list/],
      ['REDIS_URL', 'redis://a:6379,b:6379', /redis\+cluster:\/\//],
      ['REDIS_URL', 'redis+cluster://a:99999', /not host:port/],
    ];
    for (const [name, u, why] of bad) {
      const m = refused({ [name]: u });
      expect(m, u).toMatch(new RegExp(`^${name} is not a connection string its driver takes`));
      expect(m, u).toMatch(why);
      expect(m, u).not.toContain('hunter2');
      expect(m.split('\n')).toHaveLength(1);
    }
  });

  it('takes a PostgreSQL URL for DATABASE_URL, and names it when the server refuses at start', () => {
    expect(loadConfig({ DATABASE_URL: 'postgres://u:p@db:5432/tel' }).databaseUrl).toBe('postgres://u:p@db:5432/tel');
    expect(loadConfig({ DATABASE_URL: 'postgresql://db/tel' }).databaseUrl).toBe('postgresql://db/tel');
    const m = refused({ DATABASE_URL: 'mysql://u:hunter2@db/tel' });
    expect(m).toMatch(/^DATABASE_URL must start with postgres:\/\/ or postgresql:\/\//);
    expect(m).not.toContain('hunter2');
    const config = loadConfig({ DATABASE_URL: 'postgres://db/tel' });
    const missing = Object.assign(new Error('database "tel" does not exist'), { code: '3D000' });
    expect(startupProblem(missing, config)).toBe('DATABASE_URL: database "tel" does not exist');
    expect(startupProblem(Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:5432'), { code: 'ECONNREFUSED' }), config)).toMatch(/DATABASE_URL/);
  });

  it('takes a Redis key prefix (default ct) and an optional health port for processes without the api role', () => {
    expect(loadConfig({})).toMatchObject({ redisPrefix: 'ct', healthPort: undefined });
    expect(loadConfig({ REDIS_PREFIX: 'prod-eu.1', HEALTH_PORT: '8081' })).toMatchObject({ redisPrefix: 'prod-eu.1', healthPort: 8081 });
    expect(refused({ REDIS_PREFIX: 'a b' })).toMatch(/^REDIS_PREFIX must be 1 to 64 letters/);
    expect(refused({ HEALTH_PORT: '70000' })).toMatch(/^HEALTH_PORT must be a port number/);
  });
});

describe('startupProblem', () => {
  const config = loadConfig({ DATA_DIR: '/srv/data' });
  const errno = (code: string, extra: Record<string, unknown> = {}) => Object.assign(new Error(code), { code, ...extra });
  it('turns a failed start that a setting can fix into one line naming the setting', () => {
    expect(startupProblem(errno('EADDRINUSE', { syscall: 'listen', address: '127.0.0.1', port: 8080 }), config)).toMatch(/127\.0\.0\.1:8080 is already in use.*PORT/);
    expect(startupProblem(errno('EACCES', { syscall: 'open', path: '/srv/data/events.db' }), config)).toMatch(/^DATA_DIR \/srv\/data cannot be written/);
    expect(startupProblem(errno('ECONNREFUSED'), config)).toMatch(/REDIS_URL/);
    expect(startupProblem(new ConfigError('PROVISION_FILE x refused: bad'), config)).toBe('PROVISION_FILE x refused: bad');
    const mongo = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:27017\n  more'), { name: 'MongoServerSelectionError' });
    expect(startupProblem(mongo, config)).toBe('MONGODB_URL: connect ECONNREFUSED 127.0.0.1:27017');
  });
  it('leaves a bug a bug (null: the caller keeps the stack trace)', () => {
    expect(startupProblem(new TypeError('undefined is not a function'), config)).toBeNull();
  });
});
