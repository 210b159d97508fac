/**
 * The server's analytics projector and another writer of the same store (`telephony export calls`
 * catching the store up from its own process while the server runs): whichever writes a range first
 * wins it, and the projector folds on from the store instead of failing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { AnalyticsStore } from '../../src/analytics/store.js';
import { AnalyticsModel } from '../../src/analytics/model.js';
import { analyticsProjector } from '../../src/analytics/projector.js';
import { SqliteEventStore } from '../../src/gateways/event-store/sqlite.js';

const H = 3_600_000;
const d0 = Date.UTC(2026, 0, 1);
const ids = { svcId: 7, agentId: 1 };

let dir: string;
let clock = d0;
let events: SqliteEventStore;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'ct-analytics-projector-'));
  events = new SqliteEventStore(path.join(dir, 'events.db'), () => clock);
});
afterEach(async () => {
  await events.close();
  rmSync(dir, { recursive: true, force: true });
});

const at = async (time: number, streamId: string, type: string, data: Record<string, unknown>) => {
  clock = time;
  await events.appendToStream(streamId, [{ type, data }]);
};
const loginSpan = async (from: number, to: number) => {
  await at(from, 'agent-7-1', 'AgentLoggedIn', { ...ids, time: from });
  await at(to, 'agent-7-1', 'AgentLoggedOut', { ...ids, time: to });
};

it('a projector whose range another writer stored first folds on from the store: every event counts once, and it keeps up', async () => {
  await at(d0, 'service-7', 'ServiceProvisioned', { svcId: 7, name: 'S', customer: 'c', timezone: 'UTC', dids: [], skills: [], queues: [], webhook: null, socketKey: null, blocked: [] });
  await at(d0, 'agent-7-1', 'AgentProvisioned', { svcId: 7, agentId: 1, name: 'A', number: '9100000001', sip: 'a', countryCode: '91', skills: [] });
  await loginSpan(d0 + H, d0 + 3 * H);
  const store = new AnalyticsStore(path.join(dir, 'analytics.db'));
  // The other writer has folded the log so far; the projector starts from the store's checkpoint (0).
  const other = new AnalyticsModel(new AnalyticsStore(path.join(dir, 'analytics.db')));
  for (const e of await events.readAll()) other.apply(e);
  const projector = analyticsProjector(events, store);
  await projector.start();
  // Before the projector's first write (on the next macrotask): the other one stores the range.
  other.flush();
  await loginSpan(d0 + 5 * H, d0 + 6 * H);
  await projector.caughtUp(5000);
  expect(store.checkpoint()).toBe(6);
  expect(store.agentDays(7, d0, d0 + 24 * H)).toEqual([{ agentId: 1, offered: 0, answered: 0, talkMs: 0, loginMs: 3 * H, breakMs: [0, 0, 0, 0, 0, 0, 0] }]);
  await projector.stop();
});

it('a write the store refuses is tried again after the followers\' backoff, with what was folded since: every event counts once', async () => {
  await at(d0, 'service-7', 'ServiceProvisioned', { svcId: 7, name: 'S', customer: 'c', timezone: 'UTC', dids: [], skills: [], queues: [], webhook: null, socketKey: null, blocked: [] });
  await at(d0, 'agent-7-1', 'AgentProvisioned', { svcId: 7, agentId: 1, name: 'A', number: '9100000001', sip: 'a', countryCode: '91', skills: [] });
  const store = new AnalyticsStore(path.join(dir, 'analytics.db'));
  const write = store.write.bind(store);
  let refusals = 3;
  const refused: number[] = [];
  store.write = (w) => {
    if (refusals > 0) {
      refusals--;
      refused.push(w.position);
      throw new Error('SQLITE_BUSY: database is locked');
    }
    write(w);
  };
  const errors: unknown[] = [];
  const projector = analyticsProjector(events, store, { error: (o: unknown) => errors.push(o), warn: () => {} } as never);
  await projector.start();
  await loginSpan(d0 + H, d0 + 3 * H);
  await projector.caughtUp(10_000);
  expect(refused.length).toBe(3);
  expect(errors.length).toBe(3);
  expect(store.checkpoint()).toBe(4);
  expect(store.agentDays(7, d0, d0 + 24 * H)).toEqual([{ agentId: 1, offered: 0, answered: 0, talkMs: 0, loginMs: 2 * H, breakMs: [0, 0, 0, 0, 0, 0, 0] }]);
  await projector.stop();
});

it('a store that refuses every write stops the projector after six tries: reports answer 503, never a half-written range', async () => {
  await at(d0, 'service-7', 'ServiceProvisioned', { svcId: 7, name: 'S', customer: 'c', timezone: 'UTC', dids: [], skills: [], queues: [], webhook: null, socketKey: null, blocked: [] });
  const store = new AnalyticsStore(path.join(dir, 'analytics.db'));
  let tries = 0;
  store.write = () => {
    tries++;
    throw new Error('SQLITE_FULL: database or disk is full');
  };
  let failed: unknown = null;
  const projector = analyticsProjector(events, store, undefined, { onFail: (err) => (failed = err) });
  await projector.start();
  await at(d0 + H, 'agent-7-1', 'AgentLoggedIn', { ...ids, time: d0 + H });
  await expect(projector.caughtUp(10_000)).rejects.toThrow();
  expect(tries).toBe(6);
  expect(String(failed)).toContain('SQLITE_FULL');
  expect(store.checkpoint()).toBe(0);
  await expect(projector.caughtUp()).rejects.toMatchObject({ statusCode: 503 });
  await projector.stop();
});
