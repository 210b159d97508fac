/**
 * docker-compose.yml, checked structurally (no docker engine runs here, so `docker compose config`
 * cannot): the four roles as separate services on KurrentDB 25.1+, MongoDB and Redis, no volume
 * shared between platform containers, every role with a healthcheck on /healthz or /readyz at the
 * port it serves them on, and every platform service's environment accepted by the platform's own
 * configuration loader.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';

interface Service {
  image?: string;
  build?: unknown;
  environment?: Record<string, string>;
  volumes?: Array<string | { type?: string; source?: string; target: string }>;
  healthcheck?: { test: string | string[] };
  depends_on?: Record<string, { condition: string }>;
}

const file = path.resolve(import.meta.dirname, '../../docker-compose.yml');
// `merge`: the platform services share their settings through YAML merge keys (<<: *platform).
const compose = parse(readFileSync(file, 'utf8'), { merge: true }) as { services: Record<string, Service>; volumes?: Record<string, unknown> };
const services = compose.services;
const platform = Object.entries(services).filter(([, s]) => s.build !== undefined || s.image?.startsWith('cloud-telephony'));

/** Compose's interpolation of `${VAR}`, `${VAR:-default}` and `${VAR:?message}`, for the loader. */
function interpolate(value: string, env: Record<string, string>): string {
  return value.replace(/\$\{(\w+)(?::([-?])([^}]*))?\}/g, (_, name: string, op: string | undefined, arg: string) => {
    if (env[name]) return env[name]!;
    if (op === '-') return arg;
    if (op === '?') throw new Error(`${name}: ${arg}`);
    return '';
  });
}

const named = (v: NonNullable<Service['volumes']>[number]) => (typeof v === 'string' ? v.split(':')[0]! : (v.source ?? ''));

describe('docker-compose.yml', () => {
  it('runs the four roles as separate services, one role each', () => {
    const roles = platform.map(([, s]) => s.environment?.ROLES).sort();
    expect(roles).toEqual(['api', 'projector', 'socket', 'worker']);
  });

  it('puts events in KurrentDB 25.1 or newer, read models in MongoDB and jobs in Redis, services of this file', () => {
    const tag = services.kurrentdb!.image!.split(':').at(-1)!;
    const [major, minor] = tag.split('.').map(Number);
    expect(services.kurrentdb!.image).toMatch(/kurrentdb:/);
    expect(major! * 100 + minor!).toBeGreaterThanOrEqual(2501);
    for (const [name, s] of platform) {
      const env = s.environment!;
      expect(new URL(env.EVENTSTORE_URL!).hostname, name).toBe('kurrentdb');
      expect(new URL(env.MONGODB_URL!).hostname, name).toBe('mongodb');
      expect(new URL(env.REDIS_URL!).hostname, name).toBe('redis');
      for (const server of ['kurrentdb', 'mongodb', 'redis']) {
        expect(s.depends_on?.[server]?.condition, `${name} waits for ${server}`).toBe('service_healthy');
        expect(services[server]!.healthcheck, `${server} has a healthcheck`).toBeDefined();
      }
    }
  });

  it('shares no volume between platform containers', () => {
    const users = new Map<string, string[]>();
    for (const [name, s] of platform) {
      for (const v of s.volumes ?? []) {
        const source = named(v);
        // A bind mount (a host path) would be a shared disk too.
        expect(source, `${name} mounts ${source}`).not.toMatch(/^[./~]/);
        users.set(source, [...(users.get(source) ?? []), name]);
      }
    }
    for (const [volume, names] of users) expect(names, `volume ${volume}`).toHaveLength(1);
    // Today none mounts anything: DATA_DIR holds only caches, local to each container.
    expect([...users.keys()]).toEqual([]);
    for (const [name, s] of Object.entries(services)) {
      if (platform.some(([p]) => p === name)) continue;
      for (const v of s.volumes ?? []) expect(platform.some(([, p]) => (p.volumes ?? []).some((w) => named(w) === named(v))), `${name}'s ${named(v)}`).toBe(false);
    }
  });

  it('gives every role a healthcheck on /healthz or /readyz at the port that serves it', () => {
    for (const [name, s] of platform) {
      const test = [s.healthcheck?.test ?? []].flat().join(' ');
      const url = /http:\/\/127\.0\.0\.1:(\d+)\/(healthz|readyz)\b/.exec(test);
      expect(url, `${name}: ${test}`).not.toBeNull();
      const env = s.environment!;
      const served = env.ROLES!.split(',').includes('api') ? env.PORT : env.HEALTH_PORT;
      expect(url![1], name).toBe(served);
    }
  });

  it("every platform service's environment is a configuration the platform accepts", () => {
    for (const [name, s] of platform) {
      const env = Object.fromEntries(Object.entries(s.environment!).map(([k, v]) => [k, interpolate(String(v), { OPERATOR_TOKEN: 'x'.repeat(48) })]));
      const config = loadConfig(env);
      expect(config.eventStoreUrl, name).toBeDefined();
      expect(config.mongodbUrl, name).toBeDefined();
      expect(config.redisUrl, name).toBeDefined();
      expect(config.operatorTokenGenerated, name).toBe(false);
      if (!config.roles.has('api')) expect(config.healthPort, name).toBe(8081);
    }
    // Without OPERATOR_TOKEN compose refuses to start, as the file says.
    expect(() => interpolate(services.api!.environment!.OPERATOR_TOKEN!, {})).toThrow(/OPERATOR_TOKEN/);
  });
});
