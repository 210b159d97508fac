/**
 * Issue #29 item 8: requests Node's HTTP parser refuses before fastify sees them (a malformed
 * header, an `Expect` it cannot meet, headers over the limit, no Host) are answered with the
 * contract's error body wherever the connection can still carry an answer.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { teamDoc } from '../support/fixtures.js';
import { errorBodyProblem, rawBytes } from '../support/raw-http.js';

const AUTH = `authorization: Basic ${Buffer.from('acme-admin:s3cret-admin').toString('base64')}`;

describe('parser-level errors carry the contract error body', () => {
  let s: TestServer;
  let host: string;
  beforeAll(async () => {
    s = await startServer();
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() })).status).toBe(200);
    host = new URL(s.url).host;
  });
  afterAll(async () => {
    await s.stop();
  });

  const cases: Array<[string, (host: string) => string, number]> = [
    ['a header name with a space', (h) => `GET /api/v1/ping HTTP/1.1\r\nhost: ${h}\r\nbad header: x\r\n\r\n`, 400],
    ['a header value with a control character', (h) => `GET /api/v1/ping HTTP/1.1\r\nhost: ${h}\r\nx-a: a\u0001b\r\n\r\n`, 400],
    ['a garbage request line', () => `HELLO THERE\r\n\r\n`, 400],
    ['no Host on HTTP/1.1', () => `GET /api/v1/ping HTTP/1.1\r\n${AUTH}\r\n\r\n`, 400],
    ['Content-Length and Transfer-Encoding together', (h) => `POST /api/v1/send-sms HTTP/1.1\r\nhost: ${h}\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n`, 400],
    ['an Expect the server cannot meet', (h) => `GET /api/v1/ping HTTP/1.1\r\nhost: ${h}\r\n${AUTH}\r\nexpect: teapot\r\n\r\n`, 417],
    ['an Expect on a POST', (h) => `POST /api/v1/send-sms HTTP/1.1\r\nhost: ${h}\r\n${AUTH}\r\nexpect: 200-ok\r\ncontent-length: 0\r\n\r\n`, 417],
    ['headers over the limit', (h) => `GET /api/v1/ping HTTP/1.1\r\nhost: ${h}\r\nx-pad: ${'h'.repeat(20_000)}\r\n\r\n`, 431],
    ['too many header lines', (h) => `GET /api/v1/ping HTTP/1.1\r\nhost: ${h}\r\n${Array.from({ length: 3000 }, (_, i) => `x-${i}: ${i}`).join('\r\n')}\r\n\r\n`, 431],
  ];

  for (const [what, request, status] of cases) {
    it(`${what}: ${status} with the error body`, async () => {
      const res = await rawBytes(s.url, request(host));
      expect({ status: res.status, problem: errorBodyProblem(res) }).toEqual({ status, problem: null });
      expect(JSON.parse(res.text)).toMatchObject({ isError: true, code: 'INVALID_PARAMETER', message: expect.any(String) });
    });
  }

  it('Expect: 100-continue still gets its 100 and the answer', async () => {
    const body = 'number=9876543210&message=hi&service-id=101';
    const res = await rawBytes(
      s.url,
      `POST /api/v1/send-sms HTTP/1.1\r\nhost: ${host}\r\n${AUTH}\r\nconnection: close\r\nexpect: 100-continue\r\ncontent-type: application/x-www-form-urlencoded\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
      10_000,
      'expect 100-continue',
      false,
    );
    expect({ interim: res.interim, status: res.status }).toEqual({ interim: [100], status: 200 });
    expect(res.text).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('any mangled request line or header: an answer with the error body, or a close', async () => {
    const token = fc.oneof(fc.constantFrom('GET', 'POST', 'PUT', 'X', '', 'get', 'PRI', 'HTTP/1.1', 'HTTP/2.0', 'HTTP/1.0', 'HTTP/9.9', '/api/v1/ping', '*', ' ', '\t'), fc.string({ maxLength: 12 }));
    const headerLine = fc.oneof(
      fc.constantFrom('expect: 100-continue', 'expect: nope', 'transfer-encoding: gzip', 'transfer-encoding: chunked, gzip', 'content-length: -1', 'content-length: 1, 2', 'content-length: abc', 'host:', 'host: a b', ' folded: continuation', ':empty-name', 'x\u0000y: z'),
      fc.tuple(fc.string({ maxLength: 10 }), fc.string({ unit: 'binary', maxLength: 20 })).map(([k, v]) => `${k}: ${v}`),
    );
    // Mostly a good request line, so that the headers are what the parser (or Node) refuses.
    const requestLine = fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom('GET /api/v1/ping HTTP/1.1', 'POST /api/v1/send-sms HTTP/1.1', 'GET /api/v1/ping HTTP/1.0', 'GET /nowhere HTTP/1.1') },
      { weight: 1, arbitrary: fc.tuple(token, token, token).map(([m, p, v]) => `${m} ${p} ${v}`) },
    );
    const problems: string[] = [];
    await fc.assert(
      fc.asyncProperty(requestLine, fc.array(headerLine, { maxLength: 4 }), fc.boolean(), async (line, lines, withHost) => {
        const head = [line, ...(withHost ? [`host: ${host}`] : []), AUTH, ...lines].join('\r\n');
        const res = await rawBytes(s.url, `${head}\r\n\r\n`);
        const problem = res.status === 0 ? null : errorBodyProblem(res);
        if (problem) problems.push(`${JSON.stringify(head.slice(0, 200))} -> ${problem}`);
        return problem === null;
      }),
      { numRuns: 300, endOnFailure: false },
    ).catch(() => {});
    expect(problems.slice(0, 10)).toEqual([]);
  }, 120_000);

  it('the connection still serves a good request after the refusals', async () => {
    const res = await s.api('/api/v1/ping');
    expect(res.status).toBe(200);
  });
});
