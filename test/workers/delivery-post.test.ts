/** postJson: one signed POST as the URL says (parsed once per URL), and the refusals before any connection. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { postJson } from '../../src/gateways/http-delivery/post.js';
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

  it('refuses a bad URL, another scheme, and a private address literal unless allowed, every time it is asked', async () => {
    for (let i = 0; i < 2; i++) {
      await expect(postJson('not a url', '{}', { timeoutMs: 500, allowPrivate: true })).rejects.toThrow('invalid URL: not a url');
      await expect(postJson('ftp://example.com/x', '{}', { timeoutMs: 500, allowPrivate: true })).rejects.toThrow('unsupported URL scheme ftp:');
      await expect(postJson(`${rx.url}/hook`, '{}', { timeoutMs: 500, allowPrivate: false })).rejects.toThrow(/refused: 127\.0\.0\.1/);
      await expect(postJson('http://[::1]:9/hook', '{}', { timeoutMs: 500, allowPrivate: false })).rejects.toThrow(/refused: ::1/);
    }
  });
});
