/**
 * The example clients a user runs (examples/*.mjs, Node alone, nothing to install): the webhook
 * receiver verifies Standard Webhooks signatures, the socket client prints a service's events.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { signedHeaders } from '../../src/gateways/http-delivery/signing.js';
import { root } from '../support/build.js';
import { startProvisioned, type TestServer } from '../support/server.js';
import { until } from '../support/until.js';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const children: ChildProcess[] = [];

function run(file: string, env: Record<string, string>) {
  const child = spawn(process.execPath, [path.join(root, 'examples', file)], { env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const out = { stdout: '', stderr: '' };
  child.stdout!.on('data', (b) => (out.stdout += b));
  child.stderr!.on('data', (b) => (out.stderr += b));
  return out;
}

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise((r) => srv.close(r));
  return port;
}

afterEach(async () => {
  for (const c of children.splice(0)) {
    if (c.exitCode === null) {
      const exited = new Promise((r) => c.once('exit', r));
      c.kill();
      await exited;
    }
  }
});

describe('examples/webhook-receiver.mjs', () => {
  it('accepts a correctly signed delivery once, refuses a bad signature, a changed body and a stale timestamp', async () => {
    const port = await freePort();
    const out = run('webhook-receiver.mjs', { PORT: String(port), WEBHOOK_SECRET: SECRET });
    await until(() => out.stderr.includes('webhook receiver on'), 'the receiver listening');
    const url = `http://127.0.0.1:${port}/hook`;
    const body = JSON.stringify({ callid: 'c-1', disposition: 'answered' });
    const now = Math.floor(Date.now() / 1000);
    const post = (headers: Record<string, string>, payload = body) =>
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: payload }).then((r) => r.status);

    const good = signedHeaders(SECRET, 'c-1', now, body);
    expect(await post(good)).toBe(204);
    expect(await post(good)).toBe(204); // a redelivery is acknowledged, printed once
    expect(await post(signedHeaders('whsec_' + Buffer.from('another key').toString('base64'), 'c-1', now, body))).toBe(401);
    expect(await post(good, body.replace('answered', 'missed'))).toBe(401);
    expect(await post(signedHeaders(SECRET, 'c-2', now - 3600, body))).toBe(401);
    expect(await post({})).toBe(401);
    // Several signatures (a key rotation): one matching is enough.
    expect(await post({ ...signedHeaders(SECRET, 'c-3', now, body), 'webhook-signature': `v1,AAAA ${signedHeaders(SECRET, 'c-3', now, body)['webhook-signature']}` })).toBe(204);

    await until(() => out.stdout.trim().split('\n').length >= 2, 'two printed deliveries');
    const printed = out.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(printed.map((p) => p.webhookId)).toEqual(['c-1', 'c-3']);
    expect(printed[0].payload).toEqual({ callid: 'c-1', disposition: 'answered' });
  });
});

describe('examples/socket-client.mjs', () => {
  let s: TestServer;
  afterAll(async () => {
    await s?.stop();
  });

  it("prints the service's call events as JSON lines", async () => {
    s = await startProvisioned({ SIM_ANSWER_MS: '20' });
    const out = run('socket-client.mjs', { SVC_ID: '101', SOCKET_KEY: 'k-101-secret', SOCKET_PORT: String(s.platform.socket!.port) });
    await until(() => out.stderr.includes('subscribed to service 101'), 'the client subscribed');
    const res = await s.ops('/ops/v1/simulator/inbound', { method: 'POST', json: { did: '8000000101', from: '9811111111' } });
    expect(res.status).toBe(200);
    const { xnid } = (await res.json()) as { xnid: string };
    await until(() => out.stdout.includes('"CustomerRing"'), 'a CustomerRing line');
    const ring = out.stdout.trim().split('\n').map((l) => JSON.parse(l)).find((e) => e.event === 'CustomerRing');
    expect(ring).toMatchObject({ xnid, number: '9811111111', svc: '101', type: 'Inbound' });
  });

  it('stops with exit code 1 on a wrong key', async () => {
    s ??= await startProvisioned();
    const out = run('socket-client.mjs', { SVC_ID: '101', SOCKET_KEY: 'wrong', SOCKET_PORT: String(s.platform.socket!.port) });
    const child = children[children.length - 1]!;
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    expect(code).toBe(1);
    expect(out.stderr).toContain('refused key');
  });
});
