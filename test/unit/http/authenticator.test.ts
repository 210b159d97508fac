/** Basic credentials: an unknown username costs the same work as a wrong password (one slow verification). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteReadStore } from '../../../src/gateways/read-store/sqlite.js';
import { Authenticator } from '../../../src/http/auth/authenticator.js';
import { HotReadStore } from '../../../src/gateways/read-store/hot.js';
import { hashPassword, verifyPassword } from '../../../src/domain/password.js';

describe('Authenticator', () => {
  let dir: string;
  let reads: SqliteReadStore;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'ct-auth-'));
    reads = new SqliteReadStore(path.join(dir, 'read.db'));
    const user = { id: 7, username: 'asha', name: 'Asha', email: '', number: '', admin: false, agentId: 1001, services: [101], customer: 'acme', passwordHash: await hashPassword('right-password'), active: true };
    const gone = { ...user, id: 8, username: 'gone', active: false };
    await reads.commit(
      [
        { collection: 'users', id: '7', doc: user },
        { collection: 'users', id: '8', doc: gone },
        { collection: 'usernames', id: 'asha', doc: { id: 'asha', userId: 7 } },
        { collection: 'usernames', id: 'gone', doc: { id: 'gone', userId: 8 } },
      ],
      {},
    );
  });
  afterAll(async () => {
    await reads.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs exactly one scrypt verification for an unknown user, a deactivated user and a wrong password alike', async () => {
    const calls: string[] = [];
    const auth = new Authenticator(reads, async (password, hash) => {
      calls.push(hash.split('$')[0]!);
      return verifyPassword(password, hash);
    });
    const cost = async (u: string, p: string) => {
      const before = calls.length;
      const result = await auth.authenticate(u, p);
      return { ok: result !== null, verifications: calls.length - before };
    };
    expect(await cost('nobody', 'whatever')).toEqual({ ok: false, verifications: 1 });
    expect(await cost('gone', 'right-password')).toEqual({ ok: false, verifications: 1 });
    expect(await cost('asha', 'wrong-password')).toEqual({ ok: false, verifications: 1 });
    // A wrong password is never remembered: the next try costs the same again.
    expect(await cost('asha', 'wrong-password')).toEqual({ ok: false, verifications: 1 });
    expect(await cost('asha', 'right-password')).toEqual({ ok: true, verifications: 1 });
    expect(calls.every((c) => c === 'scrypt')).toBe(true);
  });

  it('with hot read models a remembered credential is checked in memory, until the password changes', async () => {
    const hot = new HotReadStore(reads, new Set(['users', 'usernames']));
    const auth = new Authenticator(hot);
    expect(auth.cached('asha', 'right-password')).toBeUndefined(); // never verified (and nothing loaded)
    const user = await auth.authenticate('asha', 'right-password');
    expect(user).toMatchObject({ id: 7, username: 'asha', agentId: 1001, services: [101] });
    expect(auth.cached('asha', 'right-password')).toBe(user);
    expect(auth.cached('asha', 'wrong-password')).toBeUndefined();
    // A connection's header verified on it passes by comparison, while the user's documents stand.
    const conn = {};
    const header = `Basic ${Buffer.from('asha:right-password').toString('base64')}`;
    expect(auth.forConnection(conn, header)).toBeUndefined();
    expect(auth.cached('asha', 'right-password', { connection: conn, header })).toBe(user);
    expect(auth.forConnection(conn, header)).toBe(user);
    expect(auth.forConnection(conn, `Basic ${Buffer.from('asha:wrong-password').toString('base64')}`)).toBeUndefined();
    expect(auth.forConnection({}, header)).toBeUndefined();
    expect(auth.cached('nobody', 'right-password')).toBeUndefined();
    const stored = (await hot.get<Record<string, unknown>>('users', '7'))!;
    await hot.commit([{ collection: 'users', id: '7', doc: { ...stored, passwordHash: await hashPassword('new-password') } }], {});
    expect(auth.cached('asha', 'right-password')).toBeUndefined();
    expect(auth.forConnection(conn, header)).toBeUndefined();
    expect(await auth.authenticate('asha', 'right-password')).toBeNull();
    await hot.commit([{ collection: 'users', id: '7', doc: { ...stored, active: false } }], {});
    expect(auth.cached('asha', 'right-password')).toBeUndefined();
  });
});
