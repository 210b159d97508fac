/**
 * CONTRACT 2, issue #29 item 6: a JSON array or object where a route declares a string, an integer
 * or a boolean is 400 INVALID_PARAMETER naming that parameter, on every route that takes parameters
 * in a body; it is never read as one of its items. A name repeated in a query string or a form
 * still takes its last value.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { teamDoc } from '../support/fixtures.js';

interface Op {
  method: string;
  path: string;
  /** Declared parameters of a scalar type: name → JSON Schema type. */
  scalars: Record<string, string>;
}

const SCALAR = new Set(['string', 'integer', 'boolean']);

describe('parameter types on every route', () => {
  let s: TestServer;
  const ops: Op[] = [];
  beforeAll(async () => {
    s = await startServer({ SIM_ANSWER_MS: '10' });
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() })).status).toBe(200);
    const doc = await (await fetch(`${s.url}/docs/json`)).json();
    type Schema = { type?: string; properties?: Record<string, Schema> };
    type Operation = { parameters?: { name: string; in: string; schema?: Schema }[]; requestBody?: { content: Record<string, { schema: Schema }> } };
    for (const [p, byMethod] of Object.entries(doc.paths as Record<string, Record<string, Operation>>)) {
      for (const [method, op] of Object.entries(byMethod)) {
        // A GET has no body: a name repeated in its query string is the contract's "last value wins".
        if (method === 'get') continue;
        const content = op.requestBody?.content ?? {};
        // A body that is a whole document (provisioning) is not parameters: its own schema checks it.
        if (op.requestBody && !content['application/x-www-form-urlencoded'] && !content['multipart/form-data']) continue;
        const scalars: Record<string, string> = {};
        for (const q of op.parameters ?? []) if (q.in === 'query' && SCALAR.has(q.schema?.type ?? '')) scalars[q.name] = q.schema!.type!;
        for (const c of Object.values(content)) for (const [k, v] of Object.entries(c.schema.properties ?? {})) if (SCALAR.has(v.type ?? '') && (v as { format?: string }).format !== 'binary') scalars[k] = v.type!;
        ops.push({ method: method.toUpperCase(), path: p.replace(/\{(\w+)\}/g, 'x1'), scalars });
      }
    }
    // Where an array is read as its item, this one changes the password the others present: last.
    ops.sort((a, b) => Number(a.path === '/api/v1/user-password') - Number(b.path === '/api/v1/user-password'));
  });
  afterAll(async () => {
    await s.stop();
  });

  it('finds the routes that take parameters in a body', () => {
    expect(ops.length).toBeGreaterThan(15);
    const sms = ops.find((o) => o.method === 'POST' && o.path === '/api/v1/send-sms')!;
    expect(sms.scalars).toMatchObject({ number: 'string', 'service-id': 'integer', message: 'string' });
    expect(ops.some((o) => o.path.startsWith('/ops/'))).toBe(true);
  });

  it('send-sms: an array for number or service-id among otherwise good values is 400, nothing sent', async () => {
    const good = { number: '9876543210', message: 'hello', 'service-id': 101 };
    for (const [name, bad] of [['number', ['9876543210']], ['service-id', [101]], ['message', ['hello']], ['tries', [1]]] as const) {
      const res = await s.api('/api/v1/send-sms', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...good, [name]: bad }) });
      expect({ name, status: res.status }).toEqual({ name, status: 400 });
      expect(await res.json()).toMatchObject({ isError: true, code: 'INVALID_PARAMETER', message: expect.stringContaining(name) });
    }
    const ok = await s.api('/api/v1/send-sms', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(good) });
    expect(ok.status).toBe(200);
  });

  it('a name repeated in a query string or a form still takes its last value', async () => {
    const q = await s.api('/api/v1/send-sms?number=123&number=9876543210&service-id=7&service-id=101', { method: 'POST', form: { message: 'hi' } });
    expect(q.status).toBe(200);
    const f = await s.api('/api/v1/send-sms', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'number=1&number=9876543210&message=hi&service-id=101' });
    expect(f.status).toBe(200);
    const g = await s.api('/api/v1/agents?svc-id=7&svc-id=101');
    expect(g.status).toBe(200);
  });
  it('refuses a JSON array or object for a scalar parameter with 400 naming it, alone or among good values', async () => {
    const failures: string[] = [];
    for (const op of ops) {
      const headers: Record<string, string> = op.path.startsWith('/ops/') ? {} : { authorization: `Basic ${Buffer.from('acme-admin:s3cret-admin').toString('base64')}` };
      for (const name of Object.keys(op.scalars)) {
        for (const bad of [['9876543210'], ['1', '2'], [], { a: '1' }]) {
          const body = JSON.stringify({ [name]: bad });
          const init = { method: op.method, headers: { ...headers, 'content-type': 'application/json' }, body };
          const res = op.path.startsWith('/ops/') ? await s.ops(op.path, init) : await fetch(s.url + op.path, init);
          const text = await res.text();
          let answer: { code?: string; message?: string } = {};
          try {
            answer = JSON.parse(text);
          } catch {
            // not JSON: reported below
          }
          if (res.status !== 400 || answer.code !== 'INVALID_PARAMETER' || !String(answer.message).includes(name)) {
            failures.push(`${op.method} ${op.path} ${body} -> ${res.status} ${text.slice(0, 120)}`);
          }
        }
      }
    }
    expect(failures).toEqual([]);
  }, 120_000);
});
