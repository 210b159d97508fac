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
import { WriterThread, decodeGroup, encodeGroup, writerHandler } from '../../src/gateways/event-store/sqlite-writer.js';
import type { PreparedAppend } from '../../src/gateways/event-store/sqlite-group.js';
import { WrongExpectedRevisionError } from '../../src/gateways/event-store/port.js';
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

describe('groups that queue for the writer thread', () => {
  const one = (streamId: string, expectedRevision: PreparedAppend['expectedRevision'], type: string): PreparedAppend[] => [
    { streamId, expectedRevision, time: 1_700_000_000_000, events: [{ id: null, type, data: '{}', metadata: '{}' }] },
  ];
  const groups = (): PreparedAppend[][][] => [
    [one('a', 'no_stream', 'A0'), one('b', 'no_stream', 'B0')],
    // Its second command expects a revision 'a' does not have: only that one is refused.
    [one('c', 'no_stream', 'C0'), one('a', 5, 'A-refused'), one('a', 0, 'A1')],
    [one('d', 'no_stream', 'D0')],
  ];
  type Answer = { outcomes: ({ ok: unknown } | { err: unknown })[]; inserted: (string | number)[][]; head: number };
  /**
   * What each group must get back, its first event stored at `base + 1`, whether or not they shared a
   * transaction; `conflict` tells a refusal for a wrong expected revision (on the wire, or as an error).
   */
  const expectAnswers = ([a, b, c]: Answer[], base: number, conflict: (err: unknown) => boolean) => {
    expect(a!.outcomes).toEqual([{ ok: [{ nextExpectedRevision: 0, position: base + 1 }] }, { ok: [{ nextExpectedRevision: 0, position: base + 2 }] }]);
    expect(b!.outcomes[0]).toEqual({ ok: [{ nextExpectedRevision: 0, position: base + 3 }] });
    const refused = b!.outcomes[1]!;
    expect('err' in refused && conflict(refused.err)).toBe(true);
    expect(b!.outcomes[2]).toEqual({ ok: [{ nextExpectedRevision: 1, position: base + 4 }] });
    expect(c!.outcomes).toEqual([{ ok: [{ nextExpectedRevision: 0, position: base + 5 }] }]);
    // Rows name the command of their own group.
    expect(a!.inserted.map(([cmd, , , position]) => [cmd, position])).toEqual([
      [0, base + 1],
      [1, base + 2],
    ]);
    expect(b!.inserted.map(([cmd, , , position, , revision]) => [cmd, position, revision])).toEqual([
      [0, base + 3, 0],
      [2, base + 4, 1],
    ]);
    expect(c!.inserted.map(([cmd, , , position]) => [cmd, position])).toEqual([[0, base + 5]]);
  };

  it('handled together: one transaction, each command checked on its own, each group answered with its own outcomes and rows', async () => {
    const file = path.join(dir, 'batch.db');
    await new SqliteEventStore(file).close(); // the file and its layout
    const handler = writerHandler(file);
    const answers = handler.handleBatch!(groups().map(encodeGroup)).map((t) => JSON.parse(t) as Answer);
    expectAnswers(answers, 0, (err) => Array.isArray((err as { conflict?: unknown }).conflict));
    // One transaction stored the three: each answer names its last position.
    expect(answers.map((x) => x.head)).toEqual([5, 5, 5]);
    await handler.close();
    const store = new SqliteEventStore(file);
    expect((await store.readStream('a')).map((e) => e.type)).toEqual(['A0', 'A1']);
    expect(await store.headPosition()).toBe(5);
    await store.close();
  });

  it('on the thread, posted while it stores another: each gets its own answer', async () => {
    const file = path.join(dir, 'queued.db');
    await new SqliteEventStore(file).close();
    const writer = new WriterThread(file, threadModule);
    const big = writer.commit(Array.from({ length: 3000 }, (_, i) => one(`big-${i}`, 'no_stream', 'Big')));
    const answers = await Promise.all(groups().map((g) => writer.commit(g)));
    const base = (await big).inserted.at(-1)![3];
    expect(base).toBe(3000);
    expectAnswers(answers, base, (err) => err instanceof WrongExpectedRevisionError);
    // Stored together or not, no answer names a position before its own rows.
    for (const x of answers) expect(x.head).toBeGreaterThanOrEqual(x.inserted.at(-1)![3]);
    await writer.close();
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
