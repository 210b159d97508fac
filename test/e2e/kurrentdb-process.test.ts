/**
 * `EVENTSTORE_URL=kurrentdb://... npm start`: the built server as a child process on the KurrentDB
 * adapter, against the in-process gRPC double; and its refusal to run on a server older than 25.1.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KurrentDbDouble } from '../support/kurrentdb-double.js';
import { buildPlatform, PlatformProcess, type Build } from '../support/processes.js';
import { OPERATOR_TOKEN, exampleDoc } from '../support/server.js';

let build: Build;
beforeAll(() => {
  build = buildPlatform();
}, 120_000);
afterAll(() => build?.remove());

describe('npm start with EVENTSTORE_URL', () => {
  it('starts on KurrentDB, keeps provisioning there, and answers from it after a restart', async () => {
    const double = new KurrentDbDouble();
    const url = await double.start();
    const dataDir = mkdtempSync(path.join(tmpdir(), 'ct-kdb-'));
    let server = await PlatformProcess.start(build, 'server', { EVENTSTORE_URL: url, DATA_DIR: dataDir });
    try {
      const put = await fetch(`${server.url}/ops/v1/provisioning`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(exampleDoc()),
      });
      expect(put.status).toBe(200);
      expect(double.log.some((e) => e.type === 'ServiceProvisioned')).toBe(true);
      await server.stop();
      // Same event store, a fresh read store: the projector rebuilds the read models from KurrentDB.
      server = await PlatformProcess.start(build, 'server', { EVENTSTORE_URL: url.replace('kurrentdb://', 'esdb://'), DATA_DIR: mkdtempSync(path.join(tmpdir(), 'ct-kdb-')) });
      const auth = `Basic ${Buffer.from('acme-admin:s3cret-admin').toString('base64')}`;
      const login = await fetch(`${server.url}/api/v1/login`, { headers: { authorization: auth } });
      expect(login.status).toBe(200);
      expect(await login.json()).toEqual({ agentId: null, isAdmin: true, serviceId: 101 });
    } finally {
      await server.stop();
      await double.stop();
    }
  }, 60_000);

  it('refuses to start on a server older than KurrentDB 25.1, naming the version needed', async () => {
    const double = new KurrentDbDouble({ version: '24.10.0', multiStreamAppend: false });
    const url = await double.start();
    try {
      const server = await PlatformProcess.start(build, 'server', { EVENTSTORE_URL: url, DATA_DIR: mkdtempSync(path.join(tmpdir(), 'ct-kdb-')) }, false);
      const { code } = await server.exited;
      expect(code).not.toBe(0);
      expect(server.log()).toMatch(/KurrentDB 25\.1 or newer is required/);
    } finally {
      await double.stop();
    }
  }, 60_000);
});
