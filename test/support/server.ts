/** Starts the real platform on a temporary DATA_DIR and free ports, for end-to-end tests. */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino, { type Logger } from 'pino';
import { loadConfig } from '../../src/config.js';
import { createPlatform, type Platform } from '../../src/platform.js';
import type { SmsGateway } from '../../src/gateways/sms/port.js';
import { enginesFor, onEngines, type Engines } from './engines.js';
import { answerChecker, checkAnswer } from './openapi-check.js';

export const OPERATOR_TOKEN = 'test-operator-token';
export const exampleDoc = () =>
  JSON.parse(readFileSync(path.resolve(import.meta.dirname, '../../examples/provisioning.json'), 'utf8'));

export interface TestServer {
  url: string;
  dataDir: string;
  platform: Platform;
  /** With E2E_ENGINES=doubles: the KurrentDB and MongoDB doubles this server runs on. */
  engines: Engines | null;
  /** fetch against the server with Basic credentials. */
  api(pathAndQuery: string, init?: RequestInit & { auth?: [string, string] | null; form?: Record<string, string> }): Promise<Response>;
  ops(pathAndQuery: string, init?: RequestInit & { json?: unknown }): Promise<Response>;
  stop(options?: { keepData?: boolean }): Promise<void>;
}

export async function startServer(
  env: Record<string, string> = {},
  options: { dataDir?: string; now?: () => number; sms?: SmsGateway; logger?: Logger } = {},
): Promise<TestServer> {
  const dataDir = options.dataDir ?? mkdtempSync(path.join(tmpdir(), 'ct-e2e-'));
  // E2E_ENGINES=doubles: the same test on KurrentDB + MongoDB (+ Redis) doubles; the test's own env wins.
  const engines = onEngines ? await enginesFor(dataDir, { redis: !options.now }) : null;
  const config = loadConfig({
    PORT: '0',
    SOCKET_PORT: '0',
    DATA_DIR: dataDir,
    OPERATOR_TOKEN,
    RATE_LIMIT_RPS: '0',
    // Tests present wrong credentials from one address on purpose (the fuzzer a hundred times).
    AUTH_FAILURES_PER_MIN: '0',
    AUTH_FAILURES_PER_ADDRESS_PER_MIN: '0',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    LOG_LEVEL: 'silent',
    ...engines?.env,
    ...env,
  });
  let platform: Platform;
  let httpUrl: string | null;
  try {
    platform = await createPlatform(config, { logger: options.logger ?? pino({ level: 'silent' }), now: options.now, sms: options.sms });
    ({ httpUrl } = await platform.start());
  } catch (err) {
    // A server that never started keeps no engines unless a restart on its DATA_DIR may follow.
    if (!options.dataDir) await engines?.stop();
    throw err;
  }
  const url = httpUrl!;
  /** Every answer the tests get through api() and ops() holds to the server's OpenAPI document. */
  const checker = platform.app ? answerChecker(platform.app) : null;
  const checked = async (method: string | undefined, p: string, res: Response): Promise<Response> => {
    const wrong = checker ? await checkAnswer(checker, (method ?? 'GET').toUpperCase(), p, res) : null;
    if (wrong) throw new Error(`the answer does not match the OpenAPI document: ${wrong}`);
    return res;
  };
  const api: TestServer['api'] = (p, init = {}) => {
    const { auth = ['acme-admin', 's3cret-admin'], form, ...rest } = init;
    const headers = new Headers(rest.headers);
    if (auth) headers.set('authorization', `Basic ${Buffer.from(`${auth[0]}:${auth[1]}`).toString('base64')}`);
    let body = rest.body;
    if (form) {
      body = new URLSearchParams(form).toString();
      headers.set('content-type', 'application/x-www-form-urlencoded');
    }
    return fetch(url + p, { ...rest, headers, body }).then((res) => checked(rest.method, p, res));
  };
  const ops: TestServer['ops'] = (p, init = {}) => {
    const { json, ...rest } = init;
    const headers = new Headers(rest.headers);
    if (!headers.has('authorization')) headers.set('authorization', `Bearer ${OPERATOR_TOKEN}`);
    let body = rest.body;
    if (json !== undefined) {
      body = JSON.stringify(json);
      headers.set('content-type', 'application/json');
    }
    return fetch(url + p, { ...rest, headers, body }).then((res) => checked(rest.method, p, res));
  };
  return {
    url,
    dataDir,
    platform,
    engines,
    api,
    ops,
    async stop({ keepData = false } = {}) {
      await platform.stop();
      // Kept data keeps its engines too: a restart on this DATA_DIR finds the same log and read models.
      if (!keepData) await engines?.stop();
      if (!keepData && !options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Starts a server with the contract's example document provisioned. */
export async function startProvisioned(env: Record<string, string> = {}): Promise<TestServer> {
  const server = await startServer(env);
  const res = await server.ops('/ops/v1/provisioning', { method: 'PUT', json: exampleDoc() });
  if (res.status !== 200) throw new Error(`provisioning failed: ${res.status} ${await res.text()}`);
  return server;
}
