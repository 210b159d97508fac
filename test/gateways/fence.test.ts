/**
 * The worker's fence (src/gateways/event-store/fence.ts) on the embedded log and on KurrentDB (the
 * gRPC double): once a newer holding armed it, an older holding's appends are refused and store
 * nothing; and a worker frozen past its lease (LeaseKeeper) is stopped by the fence, not by luck.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { Fence, FencedOutError, WORKER_FENCE_STREAM } from '../../src/gateways/event-store/fence.js';
import type { EventStore } from '../../src/gateways/event-store/port.js';
import { SqliteEventStore } from '../../src/gateways/event-store/sqlite.js';
import { KurrentDbEventStore } from '../../src/gateways/event-store/kurrentdb.js';
import { SqliteLease } from '../../src/gateways/lease/sqlite.js';
import type { Lease } from '../../src/gateways/lease/port.js';
import { LeaseKeeper } from '../../src/workers/lease-keeper.js';
import { KurrentDbDouble } from '../support/kurrentdb-double.js';
import { until } from '../support/until.js';
import { PostgresEventStore } from '../../src/gateways/event-store/postgres.js';
import { PG_URL, dropSchemas, freshSchema, postgresAvailable } from '../support/postgres.js';

const pgAvailable = await postgresAvailable();
const pgSchemas = new Set<string>();
afterAll(async () => {
  if (pgAvailable) await dropSchemas(pgSchemas);
});

const dir = mkdtempSync(path.join(tmpdir(), 'ct-fence-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

const stores: [string, () => Promise<{ store: EventStore; close(): Promise<void> }>][] = [
  [
    'embedded (SQLite)',
    async () => {
      const store = new SqliteEventStore(path.join(dir, `events-${n++}.db`));
      return { store, close: () => store.close() };
    },
  ],
  [
    'KurrentDB (gRPC double)',
    async () => {
      const double = new KurrentDbDouble();
      const store = await KurrentDbEventStore.connect(await double.start());
      return {
        store,
        close: async () => {
          await store.close();
          await double.stop();
        },
      };
    },
  ],
  ...(pgAvailable
    ? ([
        [
          'PostgreSQL',
          async () => {
            const schema = freshSchema();
            pgSchemas.add(schema);
            const store = await PostgresEventStore.open(PG_URL, { schema });
            return { store, close: () => store.close() };
          },
        ],
      ] satisfies typeof stores)
    : []),
];

const yes = async () => true;
const no = async () => false;

for (const [name, open] of stores) {
  describe(`worker fence: ${name}`, () => {
    it("refuses an older holding's appends, storing nothing, once a newer one armed it", async () => {
      const { store, close } = await open();
      try {
        const older = new Fence(store);
        const newer = new Fence(store);
        let fenced = 0;
        older.onFenced = () => fenced++;
        await older.arm(1, yes);
        const a = older.guard(store);
        await a.appendToStream('call-1', [{ type: 'Placed', data: { by: 'older' } }]);
        await newer.arm(2, yes);
        const b = newer.guard(store);
        await expect(a.appendToStream('call-1', [{ type: 'Placed', data: { by: 'older, frozen' } }])).rejects.toBeInstanceOf(FencedOutError);
        await expect(a.appendToStreams([{ streamId: 'call-2', events: [{ type: 'Placed', data: {} }], expectedRevision: 'no_stream' }])).rejects.toBeInstanceOf(FencedOutError);
        expect(fenced).toBe(1);
        expect(older.armed).toBe(false);
        await b.appendToStream('call-1', [{ type: 'Placed', data: { by: 'newer' } }], { expectedRevision: 0 });
        expect((await store.readStream('call-1')).map((e) => (e.data as { by: string }).by)).toEqual(['older', 'newer']);
        expect(await store.readStream('call-2')).toEqual([]);
        // Reads pass through; the fence stream holds one event per holding.
        expect((await b.readStream(WORKER_FENCE_STREAM)).map((e) => e.data)).toEqual([{ token: 1 }, { token: 2 }]);
      } finally {
        await close();
      }
    });

    it('lets no older holding arm over a newer one, unless it holds the lease all the same (a reset lease store)', async () => {
      const { store, close } = await open();
      try {
        await new Fence(store).arm(5, yes);
        await expect(new Fence(store).arm(4, no)).rejects.toBeInstanceOf(FencedOutError);
        const reset = new Fence(store);
        await reset.arm(1, yes);
        await reset.guard(store).appendToStream('x', [{ type: 'Done', data: {} }]);
        await expect(new Fence(store).guard(store).appendToStream('x', [{ type: 'Done', data: {} }])).rejects.toThrow(/not the active worker/);
      } finally {
        await close();
      }
    });
  });
}

/** A lease whose holder froze: it no longer renews (a stopped VM, a long GC pause), and does not know it. */
function freezable(lease: SqliteLease): Lease & { freeze(): void } {
  let frozen = false;
  return {
    get token() {
      return lease.token;
    },
    tryAcquire: () => lease.tryAcquire(),
    renew: () => (frozen ? new Promise<boolean>(() => {}) : lease.renew()),
    release: () => lease.release(),
    close: () => lease.close(),
    freeze: () => void (frozen = true),
  };
}

describe('a worker frozen past its lease', () => {
  it('is refused by the event store once the new holder armed the fence, and stops', async () => {
    const store = new SqliteEventStore(path.join(dir, 'keepers.db'));
    const leaseFile = path.join(dir, 'keepers-lease.db');
    const logger = pino({ level: 'silent' });
    const fenceA = new Fence(store);
    const fenceB = new Fence(store);
    const leaseA = freezable(new SqliteLease(leaseFile, 'worker', 300));
    let aStopped = 0;
    const a = new LeaseKeeper(leaseA, { start: async () => {}, stop: async () => void aStopped++ }, logger, { renewMs: 50, pollMs: 20, fence: fenceA });
    const b = new LeaseKeeper(new SqliteLease(leaseFile, 'worker', 300), { start: async () => {}, stop: async () => {} }, logger, { renewMs: 50, pollMs: 20, fence: fenceB });
    try {
      expect(await a.start()).toBe(true);
      const aEvents = fenceA.guard(store);
      await aEvents.appendToStream('call-9', [{ type: 'CallPlaced', data: { by: 'a' } }]);
      expect(await b.start()).toBe(false);
      leaseA.freeze();
      await b.whenActive(10_000);
      // A wakes, still believing it is the active worker, and acts on what it decided before.
      expect(a.isActive).toBe(true);
      await expect(aEvents.appendToStream('call-9', [{ type: 'CallPlaced', data: { by: 'a, again' } }])).rejects.toBeInstanceOf(FencedOutError);
      await until(() => !a.isActive && aStopped === 1, 'the fenced worker to stop');
      await fenceB.guard(store).appendToStream('call-9', [{ type: 'CallEnded', data: { by: 'b' } }]);
      expect((await store.readStream('call-9')).map((e) => e.type)).toEqual(['CallPlaced', 'CallEnded']);
    } finally {
      await b.stop();
      await a.stop();
      await store.close();
    }
  });
});
