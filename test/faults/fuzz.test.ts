/**
 * Property-based fuzzing of every route of the app's route table, in every encoding (query, form,
 * JSON, multipart, truncated and malformed multipart, garbage with any content type), with hostile
 * path segments (bad percent-encoding, over-long), URLs and headers, and good, wrong or garbage
 * credentials. The invariant: never a 5xx, and every 4xx is the contract's error body.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, OPERATOR_TOKEN, type TestServer } from '../support/server.js';
import { teamDoc } from '../support/fixtures.js';
import { errorBodyProblem, rawRequest, type RawRequest } from '../support/raw-http.js';

interface RouteEntry {
  method: string;
  url: string;
  params: string[];
}

const HOSTILE = ['', 'abc', '-1', '0', '1', '101', '202', '1001', '99999999999999999999', '1e5', 'true', 'false', '{}', '[]', 'null', 'x'.repeat(5000), '00000000-0000-4000-8000-000000000000', '../../etc/passwd', '%00', '\u0000', '9876543210', '9200002001', 'ü€😀', '<script>', "' OR 1=1 --", 'BLIND', 'http://127.0.0.1:1/x'];
const BAD_SEGMENTS = ['%zz', '%', '%E0%A4%A', 'a%2', '%C0%AF', 'x'.repeat(300), '%FF%FE', '..', '%2e%2e'];

const value = fc.oneof(fc.constantFrom(...HOSTILE), fc.string({ maxLength: 40 }), fc.integer().map(String), fc.string({ unit: 'binary', maxLength: 20 }));
const auth = fc.constantFrom<'admin' | 'agent' | 'globex' | 'wrong' | 'none' | 'garbage'>('admin', 'admin', 'agent', 'globex', 'wrong', 'none', 'garbage');
const encoding = fc.constantFrom('query', 'form', 'json', 'json-raw', 'multipart', 'multipart-truncated', 'multipart-no-boundary', 'multipart-wrong-boundary', 'multipart-garbage', 'wrong-type', 'truncated-body', 'long-url', 'long-header');

const basic = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;

function authHeader(kind: string, ops: boolean): Record<string, string> {
  if (ops) return kind === 'none' ? {} : kind === 'wrong' ? { authorization: 'Bearer nope' } : kind === 'garbage' ? { authorization: 'Bearer \u00ff' } : { authorization: `Bearer ${OPERATOR_TOKEN}` };
  switch (kind) {
    case 'admin':
      return { authorization: basic('acme-admin', 's3cret-admin') };
    case 'agent':
      return { authorization: basic('asha', 's3cret-asha') };
    case 'globex':
      return { authorization: basic('globex-admin', 's3cret-globex') };
    case 'wrong':
      return { authorization: basic('acme-admin', 'wrong') };
    case 'garbage':
      return { authorization: 'Basic !!!not-base64' };
    default:
      return {};
  }
}

function multipart(values: Record<string, string>, boundary: string): string {
  let out = '';
  for (const [k, v] of Object.entries(values)) out += `--${boundary}\r\nContent-Disposition: form-data; name="${k.replace(/"/g, '')}"\r\n\r\n${v}\r\n`;
  return `${out}--${boundary}--\r\n`;
}

/** Builds one request of the given encoding. */
function build(route: RouteEntry, path: string, values: Record<string, string>, enc: string, headers: Record<string, string>): RawRequest {
  const method = route.method;
  const q = new URLSearchParams(values).toString();
  switch (enc) {
    case 'query':
      return { method, path: `${path}?${q}`, headers };
    case 'form':
      return { method, path, headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' }, body: q };
    case 'json':
      return { method, path, headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(values) };
    case 'json-raw':
      return { method, path, headers: { ...headers, 'content-type': 'application/json' }, body: `{"${Object.keys(values)[0] ?? 'a'}": [1, {` };
    case 'multipart':
      return { method, path, headers: { ...headers, 'content-type': 'multipart/form-data; boundary=XyZ' }, body: multipart(values, 'XyZ') };
    case 'multipart-truncated': {
      const full = multipart(values, 'XyZ') || '--XyZ\r\n';
      return { method, path, headers: { ...headers, 'content-type': 'multipart/form-data; boundary=XyZ' }, body: full.slice(0, Math.max(1, Math.floor(full.length / 2))) };
    }
    case 'multipart-no-boundary':
      return { method, path, headers: { ...headers, 'content-type': 'multipart/form-data' }, body: multipart(values, 'XyZ') };
    case 'multipart-wrong-boundary':
      return { method, path, headers: { ...headers, 'content-type': 'multipart/form-data; boundary=Other' }, body: multipart(values, 'XyZ') };
    case 'multipart-garbage':
      return { method, path, headers: { ...headers, 'content-type': 'multipart/form-data; boundary=XyZ' }, body: `not multipart at all ${q}` };
    case 'wrong-type':
      return { method, path, headers: { ...headers, 'content-type': 'application/xml' }, body: `<a>${q}</a>` };
    case 'truncated-body':
      return { method, path, headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(values), contentLength: JSON.stringify(values).length + 50 };
    case 'long-url':
      return { method, path: `${path}?${q}&pad=${'p'.repeat(20_000)}`, headers };
    case 'long-header':
      return { method, path: `${path}?${q}`, headers: { ...headers, 'x-pad': 'h'.repeat(20_000) } };
    default:
      throw new Error(enc);
  }
}

describe('fuzzing every route', () => {
  let s: TestServer;
  let routes: RouteEntry[] = [];
  beforeAll(async () => {
    s = await startServer({ SIM_ANSWER_MS: '10' });
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() })).status).toBe(200);
    routes = s.platform.app!.routeList.filter((r) => r.method !== 'HEAD' && r.method !== 'OPTIONS');
  });
  afterAll(async () => {
    await s.stop();
  });

  it('reads the app route table', () => {
    expect(routes.length).toBeGreaterThan(30);
    expect(routes.find((r) => r.method === 'POST' && r.url === '/api/v1/calls')!.params).toContain('number');
    expect(routes.some((r) => r.url.includes(':'))).toBe(true);
  });

  it('never answers 5xx, always the contract error body', async () => {
    const problems: string[] = [];
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: routes.length - 1 }),
        fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }), value, { maxKeys: 3 }),
        fc.array(value, { maxLength: 12 }),
        fc.oneof(fc.constantFrom(...BAD_SEGMENTS), value.map((v) => encodeURIComponent(v))),
        encoding,
        auth,
        async (i, extra, vals, segment, enc, who) => {
          const route = routes[i]!;
          const values: Record<string, string> = { ...extra };
          route.params.forEach((name, k) => {
            if (k < vals.length) values[name] = vals[k]!;
          });
          // Keep the fuzzer's own credentials working: a random new password would lock it out.
          if (route.url === '/api/v1/user-password' && values.new !== undefined) values.new = values.new.slice(0, 7);
          const path = route.url.replace(/:(\w+)/g, () => segment);
          const req = build(route, path, values, enc, authHeader(who, route.url.startsWith('/ops/')));
          const res = await rawRequest(s.url, req).catch((err: Error) => ({ status: 599, headers: {}, text: `transport: ${err.message}` }));
          const problem = errorBodyProblem(res);
          if (problem) problems.push(`${req.method} ${req.path.slice(0, 120)} [${enc}, ${who}] -> ${problem}`);
          return problem === null;
        },
      ),
      { numRuns: 600, endOnFailure: false },
    ).catch(() => {});
    expect(problems.slice(0, 20)).toEqual([]);
  }, 120_000);

  it('answers the hostile URL and header cases with their own statuses', async () => {
    const admin = authHeader('admin', false);
    const cases: Array<[RawRequest, number]> = [
      [{ method: 'POST', path: '/api/v1/calls/%zz', headers: admin }, 400],
      [{ method: 'GET', path: '/api/v1/calls/%E0%A4%A', headers: admin }, 400],
      [{ method: 'POST', path: `/api/v1/calls/${'x'.repeat(300)}?signal=hangup`, headers: admin }, 414],
      [{ method: 'GET', path: `/api/v1/ping?pad=${'p'.repeat(10_000)}`, headers: admin }, 414],
      [{ method: 'GET', path: '/api/v1/ping', headers: { ...admin, 'x-pad': 'h'.repeat(20_000) } }, 431],
      [{ method: 'POST', path: '/api/v1/send-sms', headers: { ...admin, 'content-type': 'text/csv' }, body: 'a,b' }, 415],
      [{ method: 'POST', path: '/api/v1/send-sms', headers: { ...admin, 'content-type': 'multipart/form-data' }, body: 'number=9876543210' }, 400],
      [{ method: 'POST', path: '/api/v1/send-sms', headers: { ...admin, 'content-type': 'multipart/form-data; boundary=b' }, body: '--b\r\nContent-Disposition: form-data; name="number"\r\n\r\n98765' }, 400],
      [{ method: 'POST', path: '/api/v1/dialer', headers: { ...admin, 'content-type': 'multipart/form-data; boundary=b' }, body: '--b\r\nContent-Disposition: form-data; name="file"; filename="c.csv"\r\n\r\nnumber\n98765' }, 400],
      [{ method: 'POST', path: '/api/v1/send-sms', headers: { ...admin, 'content-type': 'application/json' }, body: '{"number": "98' }, 400],
    ];
    for (const [req, status] of cases) {
      const res = await rawRequest(s.url, req);
      expect({ path: req.path.slice(0, 60), status: res.status, problem: errorBodyProblem(res) }).toEqual({ path: req.path.slice(0, 60), status, problem: null });
    }
  });
});
