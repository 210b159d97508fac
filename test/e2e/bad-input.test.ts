/**
 * Every route of the OpenAPI document, fed malformed, missing and oversized parameters in every
 * encoding: the answer is always a 4xx with the contract's error body (or a 2xx), never a 5xx.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { teamDoc } from '../support/fixtures.js';

const NASTY = ['', 'abc', '-1', '0', '99999999999999999999', '1e5', 'true', '{}', '[]', 'null', 'x'.repeat(5000), '00000000-0000-4000-8000-000000000000', '../../etc/passwd', '%00', '9876543210'];

describe('bad input never causes a 5xx', () => {
  let s: TestServer;
  let routes: { method: string; path: string; params: string[] }[] = [];
  beforeAll(async () => {
    s = await startServer({ SIM_ANSWER_MS: '10' });
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() })).status).toBe(200);
    const doc = await (await fetch(`${s.url}/docs/json`)).json();
    for (const [p, ops] of Object.entries(doc.paths as Record<string, Record<string, { parameters?: { name: string }[]; requestBody?: { content: Record<string, { schema: { properties?: object } }> } }>>)) {
      for (const [method, op] of Object.entries(ops)) {
        const params = new Set<string>((op.parameters ?? []).map((x) => x.name));
        for (const c of Object.values(op.requestBody?.content ?? {})) for (const k of Object.keys(c.schema.properties ?? {})) params.add(k);
        routes.push({ method: method.toUpperCase(), path: p, params: [...params] });
      }
    }
    routes = routes.filter((r) => !r.path.startsWith('/docs'));
  });
  afterAll(async () => {
    await s.stop();
  });

  it('covers the whole API', () => {
    expect(routes.length).toBeGreaterThan(30);
    // Parameters come through from the schemas (query and body alike).
    expect(routes.find((r) => r.method === 'POST' && r.path === '/api/v1/calls')!.params).toContain('number');
    expect(routes.find((r) => r.method === 'PATCH' && r.path === '/api/v1/agents')!.params).toContain('break');
  });

  it('answers 4xx with the error body, in query, form and JSON encodings', async () => {
    let seed = 7;
    const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    const failures: string[] = [];
    for (const r of routes) {
      const isOps = r.path.startsWith('/ops/');
      const path = r.path.replace(/\{(\w+)\}/g, () => encodeURIComponent(NASTY[Math.floor(rnd() * NASTY.length)]!));
      for (let round = 0; round < 6; round++) {
        const values: Record<string, string> = {};
        for (const name of r.params) if (rnd() < 0.7) values[name] = NASTY[Math.floor(rnd() * NASTY.length)]!;
        const encoding = round % 3;
        const headers: Record<string, string> = {};
        let url = path;
        let body: string | undefined;
        if (r.method === 'GET' || encoding === 0) url += `?${new URLSearchParams(values)}`;
        else if (encoding === 1) {
          body = new URLSearchParams(values).toString();
          headers['content-type'] = 'application/x-www-form-urlencoded';
        } else {
          body = JSON.stringify(Object.fromEntries(Object.entries(values).map(([k, v]) => [k, rnd() < 0.3 ? Number(v) || v : v])));
          headers['content-type'] = 'application/json';
        }
        const res = isOps ? await s.ops(url, { method: r.method, headers, body }) : await s.api(url, { method: r.method, headers, body });
        // An accepted event stream (GET /api/v1/events) never ends by itself: its headers are the answer.
        if (res.status === 200 && res.headers.get('content-type')?.startsWith('text/event-stream')) {
          await res.body?.cancel();
          continue;
        }
        const text = await res.text();
        if (res.status >= 500) failures.push(`${r.method} ${url} ${body ?? ''} -> ${res.status} ${text.slice(0, 200)}`);
        else if (res.status >= 400) {
          const parsed = JSON.parse(text);
          if (parsed.isError !== true || typeof parsed.code !== 'string' || typeof parsed.message !== 'string') failures.push(`${r.method} ${url} -> ${res.status} without the error body: ${text.slice(0, 200)}`);
        }
      }
    }
    expect(failures).toEqual([]);
  }, 120_000);
});
