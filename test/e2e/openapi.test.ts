/**
 * The OpenAPI document is the routes' own schema (src/http/route.ts): every route of the app is in
 * it with an operationId, its parameters and its answers, and what it documents is what is enforced.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { teamDoc } from '../support/fixtures.js';

interface Schema {
  type?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  minimum?: number;
  maximum?: number;
  maxLength?: number;
  pattern?: string;
  enum?: unknown[];
  format?: string;
  $ref?: string;
}
interface Operation {
  operationId?: string;
  summary?: string;
  parameters?: { name: string; in: string; required?: boolean; schema: Schema }[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: Schema }> }>;
}
type Doc = { openapi: string; paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Schema> } };

const toOpenApiPath = (url: string) => url.replace(/:(\w+)/g, '{$1}');

/** Every parameter of an operation with its schema, wherever the document puts it. */
function paramsOf(op: Operation): Map<string, { schema: Schema; required: boolean; where: string }> {
  const out = new Map<string, { schema: Schema; required: boolean; where: string }>();
  for (const p of op.parameters ?? []) out.set(p.name, { schema: p.schema, required: Boolean(p.required), where: p.in });
  for (const [type, c] of Object.entries(op.requestBody?.content ?? {})) {
    for (const [name, schema] of Object.entries(c.schema.properties ?? {})) {
      if (!out.has(name)) out.set(name, { schema, required: (c.schema.required ?? []).includes(name), where: type });
    }
  }
  return out;
}

describe('the OpenAPI document', () => {
  let s: TestServer;
  let doc: Doc;
  beforeAll(async () => {
    s = await startServer();
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() })).status).toBe(200);
    doc = (await (await fetch(`${s.url}/docs/json`)).json()) as Doc;
  });
  afterAll(async () => {
    await s.stop();
  });

  const operations = () =>
    Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ path, method: method.toUpperCase(), op })));

  it('is a valid OpenAPI 3.0 document (the official meta-schema)', async () => {
    const result = await new Validator().validate(doc as unknown as Parameters<Validator["validate"]>[0]);
    expect(result.errors ?? [], JSON.stringify(result.errors, null, 1)?.slice(0, 4000)).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('has every route of the app, each with a unique operationId, a summary and its answers', () => {
    expect(doc.openapi).toMatch(/^3\./);
    const routes = s.platform.app!.routeList.filter((r) => !r.hidden && r.method !== 'HEAD' && r.method !== 'OPTIONS');
    expect(routes.length).toBeGreaterThan(30);
    const missing = routes.filter((r) => !doc.paths[toOpenApiPath(r.url)]?.[r.method.toLowerCase()]).map((r) => `${r.method} ${r.url}`);
    expect(missing).toEqual([]);

    const ids = new Set<string>();
    for (const { path, method, op } of operations()) {
      const where = `${method} ${path}`;
      expect(op.operationId, where).toMatch(/^[a-z][A-Za-z0-9]+$/);
      expect(ids.has(op.operationId!), `${where}: operationId ${op.operationId} twice`).toBe(false);
      ids.add(op.operationId!);
      expect(op.summary, where).toBeTruthy();
      const ok = op.responses['200'];
      expect(ok, `${where}: 200`).toBeDefined();
      expect(Object.keys(ok!.content ?? {}).length, `${where}: 200 has a schema`).toBeGreaterThan(0);
      for (const c of Object.values(ok!.content!)) expect(c.schema, where).toBeDefined();
      // Every failure has the contract's error body.
      const errors = Object.entries(op.responses).filter(([status]) => Number(status) >= 400);
      expect(errors.length, `${where}: error answers`).toBeGreaterThan(0);
      for (const [status, r] of errors) expect(r.content?.['application/json']?.schema.$ref, `${where} ${status}`).toBe('#/components/schemas/ErrorBody');
    }
    expect(doc.components.schemas.ErrorBody).toMatchObject({ required: ['isError', 'code', 'message'] });
  });

  it('describes parameters where clients put them, the dialer upload and the plain-text answers', () => {
    const sms = paramsOf(doc.paths['/api/v1/send-sms']!.post!);
    expect(sms.get('tries')!.schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 5 });
    expect(sms.get('message')!.schema).toMatchObject({ maxLength: 1600 });
    expect(sms.get('number')!.required).toBe(true);

    // validate-OTP and click2call read otp from the query string, as the spec's requests send it.
    for (const p of ['/api/v1/otp', '/api/v1/click2call']) {
      const otp = doc.paths[p]!.post!.parameters!.find((x) => x.name === 'otp');
      expect(otp, p).toMatchObject({ in: 'query', required: true });
    }

    const dialer = doc.paths['/api/v1/dialer']!.post!.requestBody!.content;
    expect(Object.keys(dialer)).toEqual(['multipart/form-data']);
    expect(dialer['multipart/form-data']!.schema.properties!.file).toMatchObject({ type: 'string', format: 'binary' });
    expect(dialer['multipart/form-data']!.schema.required).toEqual(expect.arrayContaining(['svc-id', 'campaign-id', 'end-time', 'file']));

    for (const [p, m] of [['/api/v1/ping', 'get'], ['/api/v1/otp', 'get'], ['/api/v1/send-sms', 'post'], ['/api/v1/dialer', 'post']] as const) {
      expect(Object.keys(doc.paths[p]![m]!.responses['200']!.content!), p).toEqual(['text/plain']);
    }
    expect(doc.paths['/api/v1/agents']!.get!.responses['200']!.content!['application/json']!.schema).toMatchObject({ type: 'array', items: { properties: { id: { type: 'integer' }, sip: { type: 'string' } } } });
  });

  it('says what the server does: answer types, media types, optional bodies, comma-separated lists', () => {
    const ok = (p: string, m: string) => doc.paths[p]![m]!.responses['200']!.content!;
    for (const p of ['/api/v1/agent-recent-calls', '/api/v1/customer-recent-calls']) expect(ok(p, 'get')['application/json']!.schema, p).toMatchObject({ type: 'array' });
    const details = ok('/api/v1/customer-details', 'get')['application/json']!.schema as { oneOf: Schema[] };
    for (const alt of details.oneOf) expect(alt).toMatchObject({ additionalProperties: false, required: Object.keys(alt.properties!) });
    expect((ok('/api/v1/subscriber', 'get')['application/json']!.schema as { items: Schema }).items.properties!.event_mask).toMatchObject({ type: 'integer' });
    expect(Object.keys(ok('/api/v1/calls', 'post')).sort()).toEqual(['application/json', 'text/plain']);
    expect(doc.paths['/api/v1/send-sms']!.post!.responses['415']).toBeDefined();
    expect((doc.paths['/api/v1/agents']!.patch!.requestBody as { required?: boolean }).required).toBe(false);
    expect((doc.paths['/api/v1/dialer']!.post!.requestBody as { required?: boolean }).required).toBe(true);
    const ids = doc.paths['/api/v1/agent-recent-calls']!.get!.parameters!.find((x) => x.name === 'recent_txn_id');
    expect(ids).toMatchObject({ style: 'form', explode: false });
  });

  it('enforces what it documents: a missing required parameter is refused naming it, on every operation', async () => {
    const failures: string[] = [];
    let checked = 0;
    for (const { path, method, op } of operations()) {
      if (path.includes('{')) continue;
      const required = [...paramsOf(op)].filter(([, p]) => p.required && p.schema.format !== 'binary').map(([name]) => name);
      if (required.length === 0) continue;
      checked++;
      const init = { method, headers: { 'content-type': 'application/json' }, body: method === 'GET' ? undefined : '{}' };
      const res = path.startsWith('/ops/') ? await s.ops(path, init) : await s.api(path, init);
      const body = (await res.json()) as { code?: string; message?: string };
      const named = required.some((name) => body.message === `${name} is required`);
      if (res.status !== 400 || body.code !== 'INVALID_PARAMETER' || !named) failures.push(`${method} ${path}: ${res.status} ${JSON.stringify(body)} (required: ${required.join(', ')})`);
    }
    expect(failures).toEqual([]);
    expect(checked).toBeGreaterThan(15);
  });

  it('enforces the documented ranges, lengths, patterns and enums', async () => {
    const sms = paramsOf(doc.paths['/api/v1/send-sms']!.post!);
    const base = { number: '9876543210', message: 'hello', 'service-id': '101' };
    const max = sms.get('tries')!.schema.maximum!;
    let res = await s.api('/api/v1/send-sms', { method: 'POST', form: { ...base, tries: String(max + 1) } });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ isError: true, code: 'INVALID_PARAMETER', message: `tries must be at most ${max}` });

    res = await s.api('/api/v1/send-sms', { method: 'POST', form: { ...base, message: 'x'.repeat(sms.get('message')!.schema.maxLength! + 1) } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toBe(`message is longer than ${sms.get('message')!.schema.maxLength} characters`);

    // The same schema refuses a JSON body's values; a JSON number is an integer there (CONTRACT 2).
    res = await s.api('/api/v1/send-sms', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...base, number: '12-34' }) });
    expect(((await res.json()) as { message: string }).message).toBe('number must be a phone number of 6 to 15 digits');
    expect(new RegExp(sms.get('number')!.schema.pattern!).test('12-34')).toBe(false);

    const deliveries = paramsOf(doc.paths['/ops/v1/deliveries']!.get!);
    expect(deliveries.get('status')!.schema.enum).toEqual(['pending', 'delivered', 'failed']);
    res = await s.ops('/ops/v1/deliveries?svc-id=101&status=lost');
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toBe('status must be one of pending, delivered, failed');
    res = await s.ops('/ops/v1/deliveries?svc-id=101&status=failed');
    expect(res.status).toBe(200);

    // A digit string is an integer; "1e3" is not, though a JSON-Schema coercion would take it.
    res = await s.api('/api/v1/agents?svc-id=1e3');
    expect(await res.json()).toEqual({ isError: true, code: 'INVALID_PARAMETER', message: 'svc-id must be an integer' });
    res = await s.api('/api/v1/agents?svc-id=%20101%20');
    expect(res.status).toBe(200);
  });
});
