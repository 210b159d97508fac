/**
 * What the SIP switch keeps in the read store must be in the file once it has acted on it (CONTRACT
 * 16): a registration before its REGISTER is answered 200, a leg's dialog before the turn that kept
 * it is over. A worker killed (kill -9) right after loses neither, even while the projectors' writes
 * are held back to be coalesced.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import type { Context } from '../../src/context.js';
import { SqliteReadStore } from '../../src/gateways/read-store/sqlite.js';
import { SIP_BINDINGS, SIP_DIALOGS, sipAccounts, sipDialogs } from '../../src/workers/call-flow/sip-accounts.js';
import type { Dialog } from '../../src/gateways/switch/sip/dialog.js';

const dir = mkdtempSync(path.join(tmpdir(), 'ct-sip-accounts-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** What another process (or this one after kill -9) finds in the file. */
const inFile = (file: string, collection: string) => {
  const db = new Database(file, { readonly: true });
  try {
    return Object.fromEntries(
      (db.prepare('SELECT id, data FROM docs WHERE collection = ? ORDER BY id').all(collection) as { id: string; data: string }[]).map((r) => [r.id, JSON.parse(r.data) as unknown]),
    );
  } finally {
    db.close();
  }
};

describe('the SIP switch’s bindings and dialogs in the read store', () => {
  it('are stored before the write resolves, while the projectors’ commits are held', async () => {
    const file = path.join(dir, 'read.db');
    // A window far longer than the test: whatever is in the file was stored because it had to be.
    const reads = new SqliteReadStore(file, Date.now, { coalesceMs: 600_000 });
    await reads.commit([], { p: 1 });
    await reads.commit([{ collection: 'calls', id: 'c1', doc: { v: 1 }, position: 2 }], { p: 2 });
    expect(inFile(file, 'calls')).toEqual({});
    const ctx = { reads, now: Date.now } as unknown as Context;

    const binding = { user: 'asha', contact: 'sip:asha@192.0.2.7:5062', flow: null, expiresAt: Date.now() + 300_000 };
    await sipAccounts(ctx).saveBinding('asha', binding);
    expect(inFile(file, SIP_BINDINGS)).toEqual({ asha: binding });

    const dialog: Dialog = {
      sipCallId: 'abc@pbx.test',
      localTag: 't1',
      remoteTag: 't2',
      local: '<sip:pbx@pbx.test>',
      remote: '<sip:9876543210@192.0.2.1>',
      remoteTarget: 'sip:9876543210@192.0.2.1:5060',
      routeSet: [],
      localSeq: 1,
      flow: { transport: 'udp', host: '192.0.2.1', port: 5060 },
      sticky: false,
    };
    const dialogs = sipDialogs(ctx);
    await dialogs.save([
      ['leg-1', { dialog }],
      ['leg-2', { dialog: { ...dialog, localTag: 't3' }, branch: 'z9hG4bKx' }],
    ]);
    expect(Object.keys(inFile(file, SIP_DIALOGS))).toEqual(['leg-1', 'leg-2']);
    await dialogs.save([['leg-1', null]]);
    expect(Object.keys(inFile(file, SIP_DIALOGS))).toEqual(['leg-2']);
    expect(await dialogs.all()).toEqual([['leg-2', { dialog: { ...dialog, localTag: 't3' }, branch: 'z9hG4bKx' }]]);

    await sipAccounts(ctx).saveBinding('asha', null);
    expect(inFile(file, SIP_BINDINGS)).toEqual({});
    // The projectors' write is still held: nothing above stored it.
    expect(inFile(file, 'calls')).toEqual({});
    await reads.close();
  });
});
