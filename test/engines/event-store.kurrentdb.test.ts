/**
 * The EventStore contract against a real KurrentDB (25.1 or newer) named by EVENTSTORE_URL, e.g.
 *   EVENTSTORE_URL='kurrentdb://127.0.0.1:2113?tls=false' npm run test:engines
 * Each store gets its own stream prefix, so runs never see each other's (or anyone's) events.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { KurrentDbEventStore } from '../../src/gateways/event-store/kurrentdb.js';
import { eventStoreContract } from '../gateways/event-store.contract.js';

const url = process.env.EVENTSTORE_URL;
const run = randomUUID().slice(0, 8);
let n = 0;
const open = () => KurrentDbEventStore.connect(url!, { streamPrefix: `ct-${run}-${n++}-` });

if (!url) {
  describe.skip('KurrentDB engine suite (set EVENTSTORE_URL to run it)', () => {
    it('needs a server', () => {});
  });
} else {
  eventStoreContract(`kurrentdb at ${url.replace(/\/\/[^@/]*@/, '//***@')}`, open);

  describe('KurrentDB server behaviours the double cannot prove', () => {
    it('metadata written by multi-stream append reads back decoded, as does the single-stream path', async () => {
      const store = await open();
      try {
        const metadata = { user: 'asha', n: 7, nested: { ok: true } };
        await store.appendToStreams([
          { streamId: 'a', events: [{ type: 'A', data: { x: 1 }, metadata }], expectedRevision: 'no_stream' },
          { streamId: 'b', events: [{ type: 'B', data: { y: 2 }, metadata }], expectedRevision: 'no_stream' },
        ]);
        await store.appendToStream('c', [{ type: 'C', data: {}, metadata }]);
        for (const s of ['a', 'b', 'c']) expect((await store.readStream(s))[0]!.metadata).toEqual(metadata);
      } finally {
        await store.close();
      }
    });

    it('stream reads carry the same commit positions as $all reads', async () => {
      const store = await open();
      try {
        await store.appendToStreams([
          { streamId: 'p', events: [{ type: 'P1', data: {} }, { type: 'P2', data: {} }], expectedRevision: 'no_stream' },
          { streamId: 'q', events: [{ type: 'Q1', data: {} }], expectedRevision: 'no_stream' },
        ]);
        const all = await store.readAll();
        const fromStreams = [...(await store.readStream('p')), ...(await store.readStream('q'))];
        expect(fromStreams.map((e) => e.position).sort((x, y) => x - y)).toEqual(all.map((e) => e.position));
        expect(new Set(all.map((e) => e.position)).size).toBe(3);
      } finally {
        await store.close();
      }
    });
  });
}
