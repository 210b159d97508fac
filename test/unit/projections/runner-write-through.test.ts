/**
 * Two projectors on one DATA_DIR (each process runs its own, ROLES with `projector` twice): with the
 * hot store's write-through, each folds a document on its own last write of it, so one that lags
 * behind the other applies every event once to it, whatever the other wrote meanwhile.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { SqliteEventStore } from '../../../src/gateways/event-store/sqlite.js';
import { SqliteReadStore } from '../../../src/gateways/read-store/sqlite.js';
import { HotReadStore } from '../../../src/gateways/read-store/hot.js';
import type { Projection } from '../../../src/projections/projection.js';
import { ProjectionRunner } from '../../../src/projections/runner.js';

const counting: Projection = {
  name: 'counting',
  keys: (e) => [e.streamId],
  evolve: (doc, e) => ({ positions: [...((doc?.positions as number[]) ?? []), e.position] }),
};

let dir: string;
let events: SqliteEventStore;
const stores: SqliteReadStore[] = [];
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'ct-write-through-'));
  events = new SqliteEventStore(path.join(dir, 'events.db'));
});
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  await events.close();
  rmSync(dir, { recursive: true, force: true });
});
const open = () => {
  const s = new SqliteReadStore(path.join(dir, 'read.db'));
  stores.push(s);
  return new HotReadStore(s, new Set());
};

it('a projector that lags behind another on the same read store applies each event once to the documents it wrote', async () => {
  for (let i = 1; i <= 9; i++) await events.appendToStream('s-1', [{ type: 'E', data: {} }]);
  const all = await events.readAll();
  const slow = new ProjectionRunner(events, open(), [counting]);
  const fast = new ProjectionRunner(events, open(), [counting]);
  await slow.applyBatch(all.slice(0, 4));
  await fast.applyBatch(all);
  const reader = open();
  expect(await reader.get('counting', 's-1')).toEqual({ positions: [1, 2, 3, 4, 5, 6, 7, 8, 9] });
  // The slow one goes on from its own fold (positions 1-4), not from the other's document.
  await slow.applyBatch(all.slice(4));
  expect(await reader.get('counting', 's-1')).toEqual({ positions: [1, 2, 3, 4, 5, 6, 7, 8, 9] });
  expect(await reader.checkpoint('counting')).toBe(9);
});

const ending: Projection = {
  name: 'ending',
  keys: (e) => [e.streamId],
  evolve: (doc, e) => (e.type === 'End' ? null : { positions: [...((doc?.positions as number[]) ?? []), e.position] }),
};

it('a projector behind another applies no event twice to a document it never wrote, and brings back none the other deleted', async () => {
  await events.appendToStream('other', [{ type: 'E', data: {} }]);
  // Two processes' projectors on one DATA_DIR: the slow one has its checkpoint (1) when the fast one runs ahead.
  const slow = new ProjectionRunner(events, open(), [ending]);
  await slow.applyBatch(await events.readAll());
  await events.appendToStream('kept', [{ type: 'E', data: {} }, { type: 'E', data: {} }]);
  await events.appendToStream('ended', [{ type: 'E', data: {} }, { type: 'End', data: {} }]);
  await events.appendToStream('kept', [{ type: 'E', data: {} }]);
  const all = await events.readAll();
  const fast = new ProjectionRunner(events, open(), [ending]);
  await fast.applyBatch(all);
  const reader = open();
  expect(await reader.get('ending', 'kept')).toEqual({ positions: [2, 3, 6] });
  // The slow one reaches the documents the fast one wrote (or deleted) after it, and never wrote itself.
  await slow.applyBatch(all.slice(1, 4)); // up to the first event of 'ended'
  expect(await reader.get('ending', 'ended')).toBeNull();
  await slow.applyBatch(all.slice(4));
  expect(await reader.get('ending', 'kept')).toEqual({ positions: [2, 3, 6] });
  expect(await reader.get('ending', 'ended')).toBeNull();
  expect(await reader.checkpoint('ending')).toBe(6);
});
