/** Health, readiness, metrics, request ids and the request log (CONTRACT section 13). */
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATOR_TOKEN, startServer, type TestServer } from '../support/server.js';
import { ADMIN, ASHA, teamDoc } from '../support/fixtures.js';
import { ended, eventually } from '../support/wait.js';
import { startReceiver, type Receiver } from '../support/receiver.js';
import { LineClient } from '../support/socket-client.js';
import { basic, openSse } from '../support/sse.js';
import { createLogger } from '../../src/platform.js';
import { loadConfig } from '../../src/config.js';
import { Readiness } from '../../src/ops/readiness.js';

/** Captures the platform's log lines (the real logger, at the given level). */
function captureLog(level: string) {
  const lines: string[] = [];
  let partial = '';
  const stream = new Writable({
    write(chunk, _enc, done) {
      partial += chunk.toString();
      let nl: number;
      while ((nl = partial.indexOf('\n')) !== -1) {
        lines.push(partial.slice(0, nl));
        partial = partial.slice(nl + 1);
      }
      done();
    },
  });
  const logger = createLogger(loadConfig({ LOG_LEVEL: level }), stream);
  return { logger, lines, entries: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

/** Parses Prometheus text: `name{labels} value` → value, by the series' full text. */
function series(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

describe('operations: health, readiness, metrics, request ids', () => {
  let s: TestServer;
  const log = captureLog('info');
  const metrics = async () => {
    const res = await s.ops('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    return res.text();
  };

  beforeAll(async () => {
    s = await startServer({ SIM_ANSWER_MS: '20' }, { logger: log.logger });
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() })).status).toBe(200);
  });
  afterAll(async () => {
    await s.stop();
  });

  it('GET /healthz and GET /readyz answer without credentials', async () => {
    const h = await fetch(`${s.url}/healthz`);
    expect([h.status, h.headers.get('content-type'), await h.json()]).toEqual([200, 'application/json; charset=utf-8', { status: 'ok' }]);
    const r = await fetch(`${s.url}/readyz`);
    expect([r.status, await r.json()]).toEqual([200, { status: 'ready' }]);
  });

  it('GET /readyz is 503 with a reason while a store does not answer', async () => {
    const real = s.platform.ctx.readiness;
    try {
      s.platform.ctx.readiness = new Readiness({
        startHead: 0,
        projectedPosition: async () => 0,
        stores: { 'read store': () => new Promise(() => {}) },
        timeoutMs: 50,
      });
      const r = await fetch(`${s.url}/readyz`);
      expect(r.status).toBe(503);
      expect(await r.json()).toEqual({ status: 'not ready', reason: 'read store: read store did not answer within 50 ms' });
    } finally {
      s.platform.ctx.readiness = real;
    }
  });

  it('GET /metrics needs the operator token', async () => {
    expect((await fetch(`${s.url}/metrics`)).status).toBe(401);
    const basicAuth = await fetch(`${s.url}/metrics`, { headers: { authorization: basic(ADMIN) } });
    expect(basicAuth.status).toBe(401);
    expect(await basicAuth.json()).toMatchObject({ isError: true, code: 'UNAUTHORIZED' });
    expect((await s.ops('/metrics', { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
  });

  it('GET /metrics: request counts and durations by route pattern, the platform gauges and the process metrics', async () => {
    const before = series(await metrics());
    const key = 'http_requests_total{method="POST",route="/api/v1/calls/:callTxnId",status_code="404"}';
    expect((await s.api('/api/v1/calls/no-such-call?token=hidden', { method: 'POST', form: { signal: 'hangup' } })).status).toBe(404);
    expect((await s.api('/api/v1/calls/another-one', { method: 'POST', form: { signal: 'hangup' } })).status).toBe(404);
    expect((await s.api('/no/such/path?x=1')).status).toBe(404);
    await s.api('/api/v1/agents?status=0&agent-number=9100001001', { method: 'PATCH' });
    const receiver = await startReceiver();
    try {
      const text = await metrics();
      const after = series(text);
      expect((after.get(key) ?? 0) - (before.get(key) ?? 0)).toBe(2);
      expect(after.get('http_request_duration_seconds_count{method="POST",route="/api/v1/calls/:callTxnId",status_code="404"}')).toBeGreaterThanOrEqual(2);
      expect(after.get('http_requests_total{method="GET",route="unmatched",status_code="404"}')).toBeGreaterThanOrEqual(1);
      expect(text).not.toContain('no-such-call');
      expect(text).not.toContain('/no/such/path');
      expect(after.get('telephony_events_appended_total')).toBeGreaterThan(before.get('telephony_events_appended_total') ?? 0);
      expect(after.get('telephony_projection_lag_events')).toBeGreaterThanOrEqual(0);
      for (const name of ['telephony_socket_clients', 'telephony_live_streams', 'process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds']) {
        expect(after.has(name), name).toBe(true);
      }
      for (const q of ['deliveries', 'sms', 'scheduled-call']) expect(after.has(`telephony_jobs_waiting{queue="${q}"}`), q).toBe(true);
      expect(text).toContain('# TYPE http_request_duration_seconds histogram');
    } finally {
      await receiver.close();
    }
  });

  it('GET /metrics: active calls per service, socket clients and live streams follow the platform', async () => {
    const socket = await LineClient.authed(s.platform.socket!.port!, 101, 'k-101-secret');
    const stream = await openSse(`${s.url}/api/v1/events?svc-id=101`, { authorization: basic(ADMIN) });
    try {
      await s.api('/api/v1/agents?status=0', { method: 'PATCH', auth: ASHA });
      const res = await s.api('/api/v1/calls', { method: 'POST', form: { number: '9876543210' } });
      const { id } = await res.json();
      await eventually(async () => (await s.platform.ctx.events.readStream(`call-${id}`)).some((e) => e.type === 'AgentUp') || null, 'the call to be answered');
      const during = series(await metrics());
      expect(during.get('telephony_active_calls{svc_id="101"}')).toBe(1);
      expect(during.get('telephony_socket_clients')).toBe(1);
      expect(during.get('telephony_live_streams')).toBe(1);
      await s.api(`/api/v1/calls/${id}`, { method: 'POST', form: { signal: 'hangup' } });
      await ended(s, id);
      await eventually(async () => !series(await metrics()).has('telephony_active_calls{svc_id="101"}') || null, 'no active call');
    } finally {
      socket.socket.destroy();
      stream.close();
    }
  });

  it('GET /metrics: webhook deliveries by kind and outcome', async () => {
    const receiver = await startReceiver();
    try {
      const doc = teamDoc();
      doc.services[0].webhook = { url: `${receiver.url}/hook`, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' };
      expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: doc })).status).toBe(200);
      await s.api('/api/v1/agents?status=0', { method: 'PATCH', auth: ASHA });
      const { id } = await (await s.api('/api/v1/calls', { method: 'POST', form: { number: '9876543210' } })).json();
      await eventually(async () => (await s.platform.ctx.events.readStream(`call-${id}`)).some((e) => e.type === 'AgentUp') || null, 'the call to be answered');
      await s.api(`/api/v1/calls/${id}`, { method: 'POST', form: { signal: 'hangup' } });
      await eventually(async () => receiver.received.some((r) => r.headers['webhook-id'] === id) || null, 'the webhook');
      await eventually(async () => (series(await metrics()).get('telephony_deliveries_total{kind="webhook",outcome="delivered"}') ?? 0) >= 1 || null, 'the delivery counted');
    } finally {
      await receiver.close();
    }
  });

  it('X-Request-Id: a well-formed one is used and echoed, anything else replaced by a fresh id, on every answer', async () => {
    const given = 'req-1.A_b';
    for (const [path, init] of [
      ['/api/v1/ping', {}],
      ['/api/v1/ping', { auth: null }],
      ['/nowhere', {}],
      ['/healthz', {}],
    ] as const) {
      const res = await s.api(path, { ...init, headers: { 'x-request-id': given } });
      expect(res.headers.get('x-request-id'), path).toBe(given);
    }
    const long = 'a'.repeat(128);
    expect((await s.api('/api/v1/ping', { headers: { 'x-request-id': long } })).headers.get('x-request-id')).toBe(long);
    for (const bad of ['a'.repeat(129), 'has space', 'semi;colon', 'ünï']) {
      const res = await s.api('/api/v1/ping', { headers: { 'x-request-id': encodeURIComponent(bad) === bad ? bad : bad.replace(/[^\x20-\x7e]/g, '?') } });
      const id = res.headers.get('x-request-id');
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
    }
    const fresh = await s.api('/api/v1/ping');
    expect(fresh.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('logs one JSON line per request at the default level: id, route pattern, status, time; never the URL', async () => {
    const id = `log-check-${Date.now()}`;
    await s.api('/api/v1/calls/some-call?otp=123456', { method: 'POST', form: { signal: 'hangup' }, headers: { 'x-request-id': id } });
    const lines = await eventually(async () => {
      const found = log.entries().filter((e) => e.reqId === id);
      return found.length > 0 ? found : null;
    }, 'the request line');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 30, reqId: id, method: 'POST', route: '/api/v1/calls/:callTxnId', status: 404, msg: 'request' });
    expect(typeof lines[0]!.ms).toBe('number');
    expect(log.lines.join('\n')).not.toContain('some-call');
    expect(log.lines.join('\n')).not.toContain('123456');
  });
});

describe('no secret reaches the log', () => {
  it('a full run at trace level: provisioning, logins, password change, OTP, click2call, subscribers, socket, SSE, metrics, webhooks', async () => {
    const log = captureLog('trace');
    const receiver: Receiver = await startReceiver();
    const s = await startServer({ SIM_ANSWER_MS: '20', LOG_LEVEL: 'trace' }, { logger: log.logger });
    const secrets = new Set<string>([OPERATOR_TOKEN, Buffer.from(OPERATOR_TOKEN).toString('base64')]);
    const addCredentials = ([u, p]: [string, string]) => {
      secrets.add(p);
      secrets.add(basic([u, p]).slice(6));
    };
    try {
      const doc = teamDoc();
      const webhookSecret = 'whsec_U2VjcmV0V2ViaG9va0tleUZvckxvZ1Rlc3Q=';
      doc.services[0].webhook = { url: `${receiver.url}/hook`, secret: webhookSecret };
      doc.services[0].socketKey = 'sock-key-never-logged';
      secrets.add(webhookSecret).add(webhookSecret.slice(6)).add('sock-key-never-logged');
      for (const u of doc.users) addCredentials([u.username, u.password]);
      expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: doc })).status).toBe(200);
      await s.ops('/ops/v1/provisioning', { method: 'PUT', json: doc, headers: { authorization: 'Bearer not-the-token-xyz' } });
      secrets.add('not-the-token-xyz');

      // Logins, right and wrong.
      expect((await s.api('/api/v1/ping', { auth: ADMIN })).status).toBe(200);
      await s.api('/api/v1/ping', { auth: ['acme-admin', 'wrong-password-123'] });
      addCredentials(['acme-admin', 'wrong-password-123']);

      // Password changes, in a form body and in the query string.
      const newPw = 'brand-new-password-1';
      expect((await s.api('/api/v1/user-password', { method: 'POST', auth: ASHA, form: { new: newPw } })).status).toBe(200);
      const newer = 'query-string-password-2';
      expect((await s.api(`/api/v1/user-password?new=${newer}`, { method: 'POST', auth: ['asha', newPw] })).status).toBe(200);
      addCredentials(['asha', newPw]);
      addCredentials(['asha', newer]);
      const asha: [string, string] = ['asha', newer];

      // OTP: issue, validate, and spend one on click2call.
      const otp1 = await (await s.api('/api/v1/otp?number=9876543210')).text();
      expect(otp1).toMatch(/^\d{6}$/);
      secrets.add(otp1);
      expect((await s.api(`/api/v1/otp?number=9876543210&otp=${otp1}`, { method: 'POST' })).status).toBe(200);
      const otp2 = await (await s.api('/api/v1/otp?number=9876543211')).text();
      secrets.add(otp2);
      expect((await s.api('/api/v1/agents?status=0', { method: 'PATCH', auth: asha })).status).toBe(200);
      const c2c = await s.api(`/api/v1/click2call?otp=${otp2}`, { method: 'POST', form: { number: '9876543211' } });
      expect(c2c.status).toBe(200);
      const { callTxnId } = await c2c.json();

      // Subscribers with auth keys in the query string and the body.
      const subKey = 'whsec_c3Vic2NyaWJlci1rZXktbmV2ZXItbG9nZ2Vk';
      secrets.add(subKey).add(subKey.slice(6));
      expect(
        (await s.api(`/api/v1/subscriber?svc-id=101&auth-key=${subKey}&force=true&channel-type=http&url=${encodeURIComponent(receiver.url + '/sub')}&is-registered=true&device-id=d1`, { method: 'POST' })).status,
      ).toBe(200);

      // The socket (right and wrong key), an SSE stream, the metrics.
      const sock = await LineClient.authed(s.platform.socket!.port!, 101, 'sock-key-never-logged');
      const wrong = await LineClient.connect(s.platform.socket!.port!);
      wrong.socket.write('101:wrong-socket-key-zz\n');
      secrets.add('wrong-socket-key-zz');
      const stream = await openSse(`${s.url}/api/v1/events?svc-id=101`, { authorization: basic(ADMIN) });
      expect((await s.ops('/metrics')).status).toBe(200);

      // The click2call call is answered, ends, and its webhook and subscriber deliveries are sent.
      await eventually(async () => (await s.platform.ctx.events.readStream(`call-${callTxnId}`)).some((e) => e.type === 'AgentUp') || null, 'the call answered');
      await s.api(`/api/v1/calls/${callTxnId}`, { method: 'POST', form: { signal: 'hangup' } });
      await ended(s, callTxnId);
      await eventually(async () => receiver.received.some((r) => r.path === '/hook') || null, 'the webhook');
      await eventually(async () => receiver.received.some((r) => r.path === '/sub') || null, 'a subscriber delivery');
      await stream.waitFor(1, 'call');
      stream.close();
      sock.socket.destroy();
      wrong.socket.destroy();
    } finally {
      await s.stop();
      await receiver.close();
    }
    const text = log.lines.join('\n');
    expect(log.entries().filter((e) => e.msg === 'request').length).toBeGreaterThanOrEqual(15);
    for (const secret of secrets) expect(text.includes(secret), `the log holds a secret: ${secret.slice(0, 4)}…`).toBe(false);
    // No URL with its query string: routes are logged as patterns.
    expect(text).not.toMatch(/\?[a-z-]+=/);
  });
});
