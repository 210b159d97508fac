/** postJson: one signed POST as the URL says (parsed once per URL), the refusals before any connection, and the pool's limit per receiver. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { CONNECTIONS_PER_RECEIVER, isReceiverBusy, postJson } from '../../src/gateways/http-delivery/post.js';
import { startReceiver, type Receiver } from '../support/receiver.js';

describe('postJson', () => {
  let rx: Receiver;
  beforeAll(async () => {
    rx = await startReceiver((r) => (r.path.includes('fail') ? 503 : 200));
  });
  afterAll(() => rx.close());

  it('POSTs the body to the path and query of the URL, with its credentials and the headers given, each time', async () => {
    const port = new URL(rx.url).port;
    const url = `http://us%20er:p%40ss@127.0.0.1:${port}/hook/a?x=1&y=2`;
    for (let i = 0; i < 2; i++) {
      const res = await postJson(url, `{"n":${i}}`, { timeoutMs: 2000, allowPrivate: true, headers: { 'webhook-id': `id-${i}` } });
      expect(res.statusCode).toBe(200);
    }
    const got = rx.received.slice(-2);
    expect(got.map((r) => [r.path, r.body, r.headers['webhook-id'], r.headers['content-type']])).toEqual([
      ['/hook/a?x=1&y=2', '{"n":0}', 'id-0', 'application/json'],
      ['/hook/a?x=1&y=2', '{"n":1}', 'id-1', 'application/json'],
    ]);
    expect(got[0]!.headers.authorization).toBe(`Basic ${Buffer.from('us er:p@ss').toString('base64')}`);
    expect((await postJson(`${rx.url}/fail`, '{}', { timeoutMs: 2000, allowPrivate: true })).statusCode).toBe(503);
  });

  it('signs the body it POSTs when asked (the three Standard Webhooks headers, next to the headers given)', async () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const body = JSON.stringify({ callid: 'c-1', note: 'é' });
    const res = await postJson(`${rx.url}/signed`, body, { timeoutMs: 2000, allowPrivate: true, headers: { 'x-extra': '1' }, sign: { secret, id: 'c-1', timestampS: 1_700_000_000 } });
    expect(res.statusCode).toBe(200);
    const got = rx.received.at(-1)!;
    expect(got.headers).toMatchObject({ 'x-extra': '1', 'webhook-id': 'c-1', 'webhook-timestamp': '1700000000' });
    expect(got.headers['webhook-signature']).toBe(new Webhook(secret).sign('c-1', new Date(1_700_000_000_000), body));
  });

  it('holds POSTs beyond the connections to one receiver in its pool: each waits for a connection within the time limit, then has the limit for itself', async () => {
    const slow = await startReceiver((r) => (r.path.startsWith('/hang') ? 'hang' : 200));
    try {
      const answered = (path: string, ms: number) => postJson(`${slow.url}${path}`, '{}', { timeoutMs: ms, allowPrivate: true });
      const hanging = Array.from({ length: CONNECTIONS_PER_RECEIVER }, (_, i) => answered(`/hang/${i}`, 600).catch((err: Error) => err));
      // Every connection hangs: one more gets none within its limit, and is never sent.
      const waited = await answered('/never', 300).catch((err: Error) => err);
      expect(isReceiverBusy(waited)).toBe(true);
      expect((waited as Error).message).toBe('receiver busy: no connection to it came free within 300 ms');
      expect(slow.received.some((r) => r.path === '/never')).toBe(false);
      // One that waits longer than the hanging ones take to time out gets a connection, and its answer.
      const next = answered('/next', 2000);
      const outcomes = await Promise.all(hanging);
      for (const o of outcomes) expect((o as Error).message).toBe('timed out after 600 ms');
      expect((await next).statusCode).toBe(200);
      expect(slow.received.filter((r) => r.path.startsWith('/hang'))).toHaveLength(CONNECTIONS_PER_RECEIVER);
    } finally {
      await slow.close();
    }
  });

  it('refuses a bad URL, another scheme, and a private address literal unless allowed, every time it is asked', async () => {
    for (let i = 0; i < 2; i++) {
      await expect(postJson('not a url', '{}', { timeoutMs: 500, allowPrivate: true })).rejects.toThrow('invalid URL: not a url');
      await expect(postJson('ftp://example.com/x', '{}', { timeoutMs: 500, allowPrivate: true })).rejects.toThrow('unsupported URL scheme ftp:');
      await expect(postJson(`${rx.url}/hook`, '{}', { timeoutMs: 500, allowPrivate: false })).rejects.toThrow(/refused: 127\.0\.0\.1/);
      await expect(postJson('http://[::1]:9/hook', '{}', { timeoutMs: 500, allowPrivate: false })).rejects.toThrow(/refused: ::1/);
    }
  });
});
