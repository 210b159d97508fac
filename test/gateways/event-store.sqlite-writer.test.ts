/**
 * The embedded log's writer thread (sqlite-writer.ts): how a group travels to it, what happens when
 * it dies, and that it keeps a process alive only while a group is in flight. The event store's
 * contract and group-commit tests also run on it (event-store.sqlite.test.ts).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import type { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteEventStore } from '../../src/gateways/event-store/sqlite.js';
import { decodeGroup, encodeGroup } from '../../src/gateways/event-store/sqlite-writer.js';
import type { PreparedAppend } from '../../src/gateways/event-store/sqlite-group.js';
import { buildOnce, type Build } from '../support/build.js';

const dir = mkdtempSync(path.join(tmpdir(), 'ct-es-thread-'));
let build: Build;
let threadModule: URL;
beforeAll(() => {
  build = buildOnce('ct-es-thread-build-');
  threadModule = pathToFileURL(path.join(build.out, 'src/gateways/event-store/sqlite-writer.js'));
}, 120_000);
afterAll(() => {
  build?.remove();
  rmSync(dir, { recursive: true, force: true });
});

describe('a group as it travels to the writer thread', () => {
  it('arrives as it was sent: every expected revision, ids present or not, any JSON text', () => {
    const group: PreparedAppend[][] = [
      [
        { streamId: 'agent-1', expectedRevision: 41, time: 1_700_000_000_123, events: [{ id: null, type: 'AgentUp', data: '{"a":"x\\u001fy\\n"}', metadata: '{}' }] },
        { streamId: 'svc-2', expectedRevision: 'no_stream', time: 5, events: [] },
      ],
      [{ streamId: 's', expectedRevision: 'any', time: 0, events: [{ id: 'e-1', type: 'T', data: 'null', metadata: '{"by":"\\"q\\""}' }, { id: '', type: '', data: '""', metadata: '{}' }].slice(0, 1) }],
      [{ streamId: 'ünï\u001f~:12:', expectedRevision: 'stream_exists', time: 9, events: [{ id: '~', type: '3:abc', data: JSON.stringify({ s: '\u001f\u0000' }), metadata: '{}' }] }],
      [{ streamId: 'n', expectedRevision: -1, time: 1, events: [] }],
    ];
    expect(decodeGroup(encodeGroup(group))).toEqual(group);
  });
});

describe('the writer thread dying', () => {
  it('fails the group in flight, and the next append starts a new thread on what the file holds', async () => {
    const file = path.join(dir, 'dies.db');
    const store = new SqliteEventStore(file, undefined, { writerThread: threadModule });
    await store.appendToStream('s', [{ type: 'A', data: {} }], { expectedRevision: 'no_stream' });
    const threadOf = () => (store as unknown as { thread: { thread: { worker: Worker } } }).thread.thread.worker;
    const worker = threadOf();
    const inFlight = store.appendToStream('s', [{ type: 'B', data: {} }], { expectedRevision: 0 });
    // Terminated as soon as the group is posted: it may or may not have been stored, and its caller is not told it was.
    await new Promise((r) => setImmediate(r));
    await worker.terminate();
    const outcome = await inFlight.then(() => 'stored', (err: Error) => err.message);
    if (outcome !== 'stored') expect(outcome).toMatch(/writer thread (exited|failed)/);
    // A new thread: the stream's head is read from the file, so a retry on the old revision is checked for real.
    const head = (await store.readStream('s')).length - 1;
    await expect(store.appendToStream('s', [{ type: 'C', data: {} }], { expectedRevision: head + 1 })).rejects.toMatchObject({ name: 'WrongExpectedRevisionError', actual: head });
    await store.appendToStream('s', [{ type: 'C', data: {} }], { expectedRevision: head });
    expect((await store.readStream('s')).map((e) => e.type).slice(-1)).toEqual(['C']);
    expect(threadOf()).not.toBe(worker);
    await store.close();
  });
});

describe('the writer thread and the life of its process', () => {
  it('keeps the process alive while a group is in flight, and not once the store is idle', async () => {
    // The built store, as the platform runs it: no writerThread option. The script never closes it.
    const script = `
      const { SqliteEventStore } = await import(${JSON.stringify(path.join(build.out, 'src/gateways/event-store/sqlite.js'))});
      const store = new SqliteEventStore(process.argv[2]);
      store.appendToStream('s', [{ type: 'A', data: { n: 1 } }]).then((r) => process.stdout.write(JSON.stringify({ r, syncs: store.stats.syncs })));`;
    const file = path.join(build.work, 'writer-alive.mjs');
    writeFileSync(file, script);
    const { stdout } = await promisify(execFile)(process.execPath, [file, path.join(dir, 'alive.db')], { cwd: build.work, timeout: 20_000 });
    // Answered (the thread kept the process up until then), one sync by the thread, and then the process ended by itself.
    expect(JSON.parse(stdout)).toEqual({ r: { nextExpectedRevision: 0, position: 1 }, syncs: 1 });
    const reopened = new SqliteEventStore(path.join(dir, 'alive.db'), undefined, { writerThread: null });
    expect((await reopened.readStream('s')).map((e) => e.data)).toEqual([{ n: 1 }]);
    await reopened.close();
  });
});
