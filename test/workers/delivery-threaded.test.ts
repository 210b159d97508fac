/**
 * The delivery poster's thread (the built code: a worker thread cannot load the TypeScript sources):
 * POSTs handed over together come back each with its own outcome (signed there when asked), refusals, time limits and a busy receiver read as
 * postJson's own, and an idle poster thread keeps no process alive.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Webhook } from 'standardwebhooks';
import { buildOnce, type Build } from '../support/build.js';
import { CONNECTIONS_PER_RECEIVER } from '../../src/gateways/http-delivery/post.js';
import { startReceiver, type Receiver } from '../support/receiver.js';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

describe('threaded delivery poster (built)', () => {
  let build: Build;
  let rx: Receiver;
  beforeAll(async () => {
    build = buildOnce('ct-poster-thread-');
    rx = await startReceiver((r) => (r.path === '/hang' ? 'hang' : Number(r.path.split('/').pop()) % 2 ? 503 : 200));
  }, 120_000);
  afterAll(async () => {
    build?.remove();
    await rx?.close();
  });

  it('posts from its thread: each outcome to its caller, refusals and time limits as postJson says them', async () => {
    const script = `
      const { threadedPoster } = await import(${JSON.stringify(path.join(build.out, 'src/gateways/http-delivery/threaded.js'))});
      const { postJson } = await import(${JSON.stringify(path.join(build.out, 'src/gateways/http-delivery/post.js'))});
      const url = process.argv[2];
      const post = threadedPoster();
      const opts = (o) => ({ timeoutMs: 2000, allowPrivate: true, ...o });
      const outcome = (p) => p.then((r) => r.statusCode, (e) => 'error: ' + e.message);
      const out = { threaded: post !== postJson };
      out.statuses = await Promise.all(Array.from({ length: 40 }, (_, i) => outcome(post(url + '/hook/' + i, JSON.stringify({ i }), opts({ sign: { secret: ${JSON.stringify(SECRET)}, id: 'id-' + i, timestampS: 1700000000 + i } })))));
      out.refused = await outcome(post(url + '/hook/0', '{}', opts({ allowPrivate: false })));
      out.refusedHere = await outcome(postJson(url + '/hook/0', '{}', opts({ allowPrivate: false })));
      out.invalid = await outcome(post('nope', '{}', opts()));
      out.timeout = await outcome(post(url + '/hang', '{}', opts({ timeoutMs: 300 })));
      // Every connection to the receiver taken: one more is never sent, and says so by its error's name.
      const held = Array.from({ length: ${CONNECTIONS_PER_RECEIVER} }, () => post(url + '/hang', '{}', opts({ timeoutMs: 1500 })).catch(() => undefined));
      out.busy = await post(url + '/hang', '{}', opts({ timeoutMs: 300 })).then(() => 'answered', (e) => e.name + ': ' + e.message);
      await Promise.all(held);
      process.stdout.write(JSON.stringify(out));`;
    const file = path.join(build.work, 'poster-run.mjs');
    writeFileSync(file, script);
    // The process ends by itself: the idle poster thread holds nothing open.
    const { stdout } = await promisify(execFile)(process.execPath, [file, rx.url], { cwd: build.work, encoding: 'utf8', timeout: 30_000 });
    const out = JSON.parse(stdout);
    expect(out.threaded).toBe(true);
    expect(out.statuses).toEqual(Array.from({ length: 40 }, (_, i) => (i % 2 ? 503 : 200)));
    const hooks = rx.received.filter((r) => r.path.startsWith('/hook/'));
    expect(hooks).toHaveLength(40);
    for (const r of hooks) expect(r.headers['webhook-id']).toBe(`id-${r.path.split('/').pop()}`);
    // Signed on the thread, as the sender asks.
    for (const r of hooks) expect(r.headers['webhook-signature']).toBe(new Webhook(SECRET).sign(r.headers['webhook-id']!, new Date(Number(r.headers['webhook-timestamp']) * 1000), r.body));
    for (const r of hooks) expect(JSON.parse(r.body)).toEqual({ i: Number(r.path.split('/').pop()) });
    expect(out.refused).toMatch(/^error: refused: 127\.0\.0\.1/);
    expect(out.refused).toBe(out.refusedHere);
    expect(out.invalid).toBe('error: invalid URL: nope');
    expect(out.timeout).toBe('error: timed out after 300 ms');
    expect(out.busy).toBe('ReceiverBusyError: receiver busy: no connection to it came free within 300 ms');
  }, 60_000);
});
