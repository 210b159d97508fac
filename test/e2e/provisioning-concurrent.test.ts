/** Issue 29 item 5: concurrent PUT /ops/v1/provisioning with different documents never answers 500. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../support/server.js';
import { teamDoc } from '../support/fixtures.js';

let s: TestServer;
beforeAll(async () => {
  s = await startServer();
}, 60_000);
afterAll(async () => {
  await s.stop();
});

describe('concurrent provisioning', () => {
  it('8 different documents at once: each is applied (200) or refused 409 CONFLICT with the contract body, never 500', async () => {
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() })).status).toBe(200);
    // Each document renames the same service and agent and moves a username: they write the same streams.
    const docs = Array.from({ length: 8 }, (_, i) => {
      const doc = teamDoc();
      doc.services[0].name = `Acme ${i}`;
      doc.services[0].agents[0].name = `Asha ${i}`;
      doc.users[0].name = `Admin ${i}`;
      return doc;
    });
    const answers = await Promise.all(docs.map((json) => s.ops('/ops/v1/provisioning', { method: 'PUT', json })));
    const statuses = answers.map((r) => r.status);
    for (const r of answers) {
      if (r.status === 200) continue;
      expect(r.status).toBe(409);
      expect(await r.json()).toMatchObject({ isError: true, code: 'CONFLICT' });
    }
    expect(statuses.filter((x) => x === 200).length).toBeGreaterThanOrEqual(1);
    // Every applied document was applied whole: the service's name and its agent's name come from one
    // of them, the same one, and a refused one left nothing.
    const applied = new Set(docs.map((_, i) => i).filter((i) => statuses[i] === 200));
    const last = async (stream: string) => (await s.platform.ctx.events.readStream(stream)).at(-1)!.data as { name: string };
    const service = (await last('service-101')).name;
    const i = Number(service.split(' ')[1]);
    expect(applied.has(i)).toBe(true);
    expect((await last('agent-101-1001')).name).toBe(`Asha ${i}`);
    console.log(`8 concurrent provisioning documents: ${statuses.join(' ')}`);
  }, 60_000);
});
