/** Idempotency-Key on POST (CONTRACT section 2). */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { idempotent } from '../../../src/http/idempotency.js';
import { render } from '../../../src/http/route.js';
import { SqliteReadStore } from '../../../src/gateways/read-store/sqlite.js';
import type { Context } from '../../../src/context.js';
import type { ReadStore } from '../../../src/gateways/read-store/port.js';
import { invalid, unavailable } from '../../../src/domain/errors.js';
import { startProvisioned, type TestServer } from '../../support/server.js';

describe('idempotent()', () => {
  /** A read store with the latency of a networked one (MongoDB): every read takes a few ms. */
  const slowReads = (inner: ReadStore): ReadStore =>
    new Proxy(inner, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver);
        if (prop !== 'get' || typeof v !== 'function') return typeof v === 'function' ? v.bind(target) : v;
        return async (...args: unknown[]) => {
          await new Promise((r) => setTimeout(r, 5));
          return (v as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  const ctxWith = (reads: ReadStore, now: () => number = Date.now) => ({ reads, now, logger: pino({ level: 'silent' }) }) as unknown as Context;

  it('runs a key once across processes sharing the read store (a claim in the store)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ct-idem-'));
    try {
      // Two module instances: two processes' in-memory state, one read-store file.
      const first = (await import('../../../src/http/idempotency.js')).idempotent;
      vi.resetModules();
      const second = (await import('../../../src/http/idempotency.js')).idempotent;
      expect(second).not.toBe(first);
      const a = ctxWith(slowReads(new SqliteReadStore(path.join(dir, 'read.db'))));
      const b = ctxWith(slowReads(new SqliteReadStore(path.join(dir, 'read.db'))));
      let runs = 0;
      const run = async () => {
        runs++;
        await new Promise((r) => setTimeout(r, 30));
        return render({ n: runs });
      };
      const answers = await Promise.all([first(a, 'u1|POST /x', 'k', run), second(b, 'u1|POST /x', 'k', run)]);
      expect(runs).toBe(1);
      expect(answers[0]!.payload).toBe(answers[1]!.payload);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs concurrent requests with one key once, even when the store answers slowly', async () => {
    const reads = new SqliteReadStore(':memory:');
    const ctx = ctxWith(slowReads(reads));
    let runs = 0;
    const run = async () => {
      runs++;
      await new Promise((r) => setTimeout(r, 10));
      return render({ n: runs });
    };
    const answers = await Promise.all([idempotent(ctx, 'u1|POST /x', 'k', run), idempotent(ctx, 'u1|POST /x', 'k', run), idempotent(ctx, 'u1|POST /x', 'k', run)]);
    expect(runs).toBe(1);
    expect(new Set(answers.map((a) => a.payload))).toEqual(new Set(['{"n":1}']));
    // Later, from the store.
    expect((await idempotent(ctx, 'u1|POST /x', 'k', run)).payload).toBe('{"n":1}');
    expect(runs).toBe(1);
    await reads.close();
  });

  it('keeps client errors like answers, but runs again after a server error', async () => {
    const reads = new SqliteReadStore(':memory:');
    const ctx = ctxWith(reads);
    const first = await idempotent(ctx, 's', 'bad', async () => {
      throw invalid('email is not an e-mail address');
    });
    expect(first.status).toBe(400);
    const again = await idempotent(ctx, 's', 'bad', async () => render(true));
    expect(again).toEqual(first);
    await expect(idempotent(ctx, 's', 'outage', async () => Promise.reject(unavailable('store down')))).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect((await idempotent(ctx, 's', 'outage', async () => render('ok'))).payload).toBe('"ok"');
    await reads.close();
  });

  it('forgets a key after 24 hours', async () => {
    let now = 1_000;
    const reads = new SqliteReadStore(':memory:', () => now);
    const ctx = ctxWith(reads, () => now);
    await idempotent(ctx, 's', 'k', async () => render(1));
    now += 24 * 3600 * 1000 - 1;
    expect((await idempotent(ctx, 's', 'k', async () => render(2))).payload).toBe('1');
    now += 1;
    expect((await idempotent(ctx, 's', 'k', async () => render(3))).payload).toBe('3');
    await reads.close();
  });

  it('refuses a key over 255 characters', async () => {
    const reads = new SqliteReadStore(':memory:');
    await expect(idempotent(ctxWith(reads), 's', 'k'.repeat(256), async () => render(1))).rejects.toMatchObject({ code: 'INVALID_PARAMETER' });
    await reads.close();
  });
});

describe('Idempotency-Key over HTTP', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startProvisioned();
  });
  afterAll(async () => {
    await s.stop();
  });
  const head = () => s.platform.ctx.events.headPosition();
  const post = (key: string, form: Record<string, string>, auth: [string, string] = ['acme-admin', 's3cret-admin']) =>
    s.api('/api/v1/user', { method: 'POST', form, auth, headers: { 'idempotency-key': key } });

  it('the same key and credentials return the first response and append nothing again', async () => {
    const first = await post('key-1', { email: 'first@acme.test' });
    expect(first.status).toBe(200);
    expect(await first.json()).toBe(true);
    const after = await head();
    const repeat = await post('key-1', { email: 'second@acme.test' });
    expect(repeat.status).toBe(200);
    expect(await repeat.json()).toBe(true);
    expect(await head()).toBe(after);
    expect((await (await s.api('/api/v1/user')).json()).email).toBe('first@acme.test');
  });

  it('a refused first request is answered the same way again, not run', async () => {
    const bad = await post('key-2', { email: 'not-an-email' });
    expect(bad.status).toBe(400);
    const body = await bad.json();
    const before = await head();
    const repeat = await post('key-2', { email: 'valid@acme.test' });
    expect(repeat.status).toBe(400);
    expect(await repeat.json()).toEqual(body);
    expect(await head()).toBe(before);
  });

  it('another user with the same key is independent', async () => {
    await post('key-3', { number: '919100000003' });
    const before = await head();
    const other = await post('key-3', { number: '919100000004' }, ['asha', 's3cret-asha']);
    expect(other.status).toBe(200);
    expect(await head()).toBe(before + 1);
    expect((await (await s.api('/api/v1/user', { auth: ['asha', 's3cret-asha'] })).json()).number).toBe('919100000004');
    expect((await (await s.api('/api/v1/user')).json()).number).toBe('919100000003');
  });

  it('the same key on another endpoint is independent; without a key every POST runs', async () => {
    await post('key-4', { email: 'four@acme.test' });
    const before = await head();
    const pw = await s.api('/api/v1/user-password', { method: 'POST', form: { new: 'a-new-password' }, auth: ['acme-admin', 's3cret-admin'], headers: { 'idempotency-key': 'key-4' } });
    expect(pw.status).toBe(200);
    expect(await head()).toBe(before + 1);
    const auth: [string, string] = ['acme-admin', 'a-new-password'];
    await s.api('/api/v1/user', { method: 'POST', form: { email: 'five@acme.test' }, auth });
    await s.api('/api/v1/user', { method: 'POST', form: { email: 'six@acme.test' }, auth });
    expect(await head()).toBe(before + 3);
  });

  it('concurrent retries with one key append once', async () => {
    const before = await head();
    const auth: [string, string] = ['asha', 's3cret-asha'];
    const answers = await Promise.all([1, 2, 3, 4].map(() => post('key-5', { email: 'together@acme.test' }, auth)));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(await head()).toBe(before + 1);
  });
});
