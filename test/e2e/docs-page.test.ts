/** /docs: the reference page for a browser, the OpenAPI document otherwise; no credentials (CONTRACT 13). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { wantsHtml } from '../../src/http/app.js';

const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';

describe('/docs', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer();
  });
  afterAll(async () => {
    await s.stop();
  });

  it('answers a browser the reference page, whose assets load, without credentials', async () => {
    const res = await fetch(`${s.url}/docs`, { headers: { accept: BROWSER } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await res.text();
    expect(html).toContain('swagger-ui');
    // The page's own script and the document it loads are served too.
    const scripts = [...html.matchAll(/src="([^"]+\.js)"/g)].map((m) => m[1]!);
    expect(scripts.length).toBeGreaterThan(0);
    for (const src of scripts) {
      const asset = await fetch(new URL(src, `${s.url}/docs/`));
      expect(asset.status, src).toBe(200);
      expect(asset.headers.get('content-type'), src).toMatch(/javascript/);
      expect((await asset.arrayBuffer()).byteLength, src).toBeGreaterThan(0);
    }
    const init = await (await fetch(`${s.url}/docs/static/swagger-initializer.js`)).text();
    expect(init).toContain('json');
  });

  it('answers anything else the OpenAPI document; /docs/json always', async () => {
    for (const accept of [undefined, '*/*', 'application/json']) {
      const res = await fetch(`${s.url}/docs`, { headers: accept ? { accept } : {} });
      expect(res.status, accept).toBe(200);
      expect(res.headers.get('content-type'), accept).toMatch(/^application\/json/);
      const doc = await res.json();
      expect(doc.openapi, accept).toMatch(/^3\./);
      expect(doc.paths['/api/v1/calls'].post.operationId).toBe('postCalls');
    }
    for (const accept of [BROWSER, '*/*']) {
      const res = await fetch(`${s.url}/docs/json`, { headers: { accept } });
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect((await res.json()).openapi).toMatch(/^3\./);
    }
  });

  it('reads Accept as a browser sends it', () => {
    expect(wantsHtml(BROWSER)).toBe(true);
    expect(wantsHtml('TEXT/HTML')).toBe(true);
    expect(wantsHtml('application/json, text/plain')).toBe(false);
    expect(wantsHtml('*/*')).toBe(false);
    expect(wantsHtml(undefined)).toBe(false);
    expect(wantsHtml('application/xhtml+xml')).toBe(false);
  });
});
