import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startServer } from '../support/server.js';
import { teamDoc } from '../support/fixtures.js';
import { ended, reached } from '../support/wait.js';

describe('a restart during a call', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'ct-restart-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('ends the calls the previous process left open and frees their agents', async () => {
    const first = await startServer({ SIM_ANSWER_MS: '20' }, { dataDir });
    expect((await first.ops('/ops/v1/provisioning', { method: 'PUT', json: teamDoc() })).status).toBe(200);
    await first.api('/api/v1/agents?status=0&agent-number=9100001001', { method: 'PATCH' });
    const res = await first.api('/api/v1/calls', { method: 'POST', form: { number: '9876543210' } });
    const { id } = await res.json();
    await reached(first, id, 'CallBridged');
    await first.stop({ keepData: true });

    const second = await startServer({ SIM_ANSWER_MS: '20' }, { dataDir });
    try {
      const events = await ended(second, id);
      const legs = events.filter((e) => /^(Customer|Agent)Hangup$/.test(e.type));
      expect(legs).toHaveLength(2);
      expect(events.at(-1)!.data).toMatchObject({ disposition: 'answered' });
      expect(await (await second.api('/api/v1/agents-free')).json()).toEqual([{ name: 'Asha', id: 1001 }]);
      expect((await second.api(`/api/v1/hangup`, { method: 'POST', form: { xnid: id } })).status).toBe(409);
    } finally {
      await second.stop({ keepData: true });
    }
  });
});
