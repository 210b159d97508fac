/**
 * docker-compose.postgres.yml, checked structurally as compose.test.ts checks docker-compose.yml: the
 * four roles as separate services on PostgreSQL and Redis, the same platform image as the other file,
 * no shared volume, a healthcheck per role, and each role's environment one the platform accepts,
 * with events, read models and the worker lease in PostgreSQL.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openWorkerLease } from '../../src/platform.js';
import { PostgresLease } from '../../src/gateways/lease/postgres.js';

interface Service {
  image?: string;
  build?: unknown;
  environment?: Record<string, string>;
  volumes?: Array<string | { source?: string; target: string }>;
  healthcheck?: { test: string | string[] };
  depends_on?: Record<string, { condition: string }>;
}
type Compose = { services: Record<string, Service> };

const load = (name: string) => parse(readFileSync(path.resolve(import.meta.dirname, '../..', name), 'utf8'), { merge: true }) as Compose;
const compose = load('docker-compose.postgres.yml');
const services = compose.services;
const platformOf = (c: Compose) => Object.entries(c.services).filter(([, s]) => s.build !== undefined || s.image?.startsWith('cloud-telephony'));
const platform = platformOf(compose);

const interpolate = (value: string, env: Record<string, string>) =>
  value.replace(/\$\{(\w+)(?::([-?])([^}]*))?\}/g, (_, name: string, op: string | undefined, arg: string) => {
    if (env[name]) return env[name]!;
    if (op === '-') return arg;
    if (op === '?') throw new Error(`${name}: ${arg}`);
    return '';
  });

describe('docker-compose.postgres.yml', () => {
  it('runs the four roles as separate services on the same image as docker-compose.yml', () => {
    expect(platform.map(([, s]) => s.environment?.ROLES).sort()).toEqual(['api', 'projector', 'socket', 'worker']);
    const images = new Set([...platform, ...platformOf(load('docker-compose.yml'))].map(([, s]) => s.image));
    expect([...images]).toEqual(['cloud-telephony:latest']);
  });

  it('puts events, read models and the lease in PostgreSQL and jobs in Redis, both services of this file', () => {
    expect(services.postgres!.image).toMatch(/^postgres:\d+/);
    for (const [name, s] of platform) {
      const env = s.environment!;
      expect(env.EVENTSTORE_URL, name).toBeUndefined();
      expect(env.MONGODB_URL, name).toBeUndefined();
      expect(new URL(interpolate(env.DATABASE_URL!, { POSTGRES_PASSWORD: 'pw' })).hostname, name).toBe('postgres');
      expect(new URL(env.REDIS_URL!).hostname, name).toBe('redis');
      for (const server of ['postgres', 'redis']) {
        expect(s.depends_on?.[server]?.condition, `${name} waits for ${server}`).toBe('service_healthy');
        expect(services[server]!.healthcheck, `${server} has a healthcheck`).toBeDefined();
      }
    }
    // The database the URL names is the one the server creates, for the user it creates.
    const url = new URL(interpolate(services.api!.environment!.DATABASE_URL!, { POSTGRES_PASSWORD: 'pw' }));
    expect(url.pathname).toBe(`/${services.postgres!.environment!.POSTGRES_DB}`);
    expect(url.username).toBe(services.postgres!.environment!.POSTGRES_USER);
  });

  it('mounts no volume in a platform container and gives every role a healthcheck where it serves it', () => {
    for (const [name, s] of platform) {
      expect(s.volumes ?? [], name).toEqual([]);
      const test = [s.healthcheck?.test ?? []].flat().join(' ');
      const url = /http:\/\/127\.0\.0\.1:(\d+)\/(healthz|readyz)\b/.exec(test);
      expect(url, `${name}: ${test}`).not.toBeNull();
      const env = s.environment!;
      expect(url![1], name).toBe(env.ROLES!.split(',').includes('api') ? env.PORT : env.HEALTH_PORT);
    }
  });

  it("every platform service's environment is a configuration the platform accepts, the worker's lease in PostgreSQL", async () => {
    for (const [name, s] of platform) {
      const env = Object.fromEntries(Object.entries(s.environment!).map(([k, v]) => [k, interpolate(String(v), { OPERATOR_TOKEN: 'x'.repeat(48), POSTGRES_PASSWORD: 'pw' })]));
      const config = loadConfig(env);
      expect(config.databaseUrl, name).toBeDefined();
      expect(config.eventStoreUrl ?? config.mongodbUrl, name).toBeUndefined();
      expect(config.redisUrl, name).toBeDefined();
      if (config.roles.has('worker')) {
        const lease = openWorkerLease(config);
        expect(lease).toBeInstanceOf(PostgresLease);
        await lease.close();
      }
    }
    expect(() => interpolate(services.api!.environment!.DATABASE_URL!, { OPERATOR_TOKEN: 'x' })).toThrow(/POSTGRES_PASSWORD/);
  });
});
