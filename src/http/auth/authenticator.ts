/**
 * Checks HTTP Basic credentials against the users read model. scrypt takes ~50 ms, so a verified
 * credential is remembered under a SHA-256 of (per-process secret, username, password), together
 * with the hash it matched: a password change replaces the hash and so voids the entry. Concurrent
 * first requests with one credential share a single verification. With hot read models a
 * remembered credential is checked without a promise (`cached`), on every request's path.
 *
 * An unknown username, a deactivated user and a wrong password cost the same: each runs one scrypt
 * verification (against a throwaway hash when there is no user), and hashes are compared in
 * constant time, so timing does not tell which usernames exist.
 */
import { hash, randomBytes } from 'node:crypto';
import { peekable, type PeekableReads, type ReadStore } from '../../gateways/read-store/port.js';
import { hashPassword, verifyPassword } from '../../domain/password.js';
import type { UserDoc, UsernameDoc } from '../../projections/users.js';
import type { AuthUser } from '../../domain/auth-user.js';


const MAX_ENTRIES = 10_000;


/** Where a credential came from: its connection (any object living as long as it) and the header as sent. */
export interface Connection {
  connection: object;
  header: string;
}

/** One AuthUser per user document (documents are replaced, never changed, when the user changes). */
const authUsers = new WeakMap<UserDoc, AuthUser>();

export class Authenticator {
  /** Secret prefix of the credential digests: they identify a credential in this process only. */
  private readonly key = randomBytes(32).toString('base64');
  private readonly peek: PeekableReads | null;
  /** credential digest -> password hash it was verified against. Map order gives LRU eviction. */
  private readonly verified = new Map<string, string>();
  private readonly inFlight = new Map<string, Promise<boolean>>();
  /**
   * Per keep-alive connection, the Authorization header last verified on it and the documents it
   * was verified against: the connection's next requests with that header are checked by comparing
   * it (no parsing, no digest) while those documents are still the current ones. Held as long as the
   * connection is, like the header itself.
   */
  private readonly connections = new WeakMap<object, { header: string; username: string; ref: UsernameDoc; doc: UserDoc }>();
  /** A hash no password matches, verified against when there is no user: the same work as a wrong password. */
  private decoy: Promise<string> | null = null;

  constructor(
    private readonly reads: ReadStore,
    private readonly verify: (password: string, hash: string) => Promise<boolean> = verifyPassword,
  ) {
    this.peek = peekable(reads);
  }

  private digest(username: string, password: string): string {
    return hash('sha256', `${this.key}\u0000${username}\u0000${password}`, 'base64');
  }

  /**
   * The user of the Authorization header verified before on this connection, when neither the
   * username's claim nor the user changed since (any change replaces their documents): undefined
   * when the credentials must be read and checked.
   */
  forConnection(connection: object, header: string): AuthUser | undefined {
    const c = this.connections.get(connection);
    if (c === undefined || c.header !== header || !this.peek) return undefined;
    if (this.peek.peek('usernames', c.username) !== c.ref || this.peek.peek('users', String(c.ref.userId)) !== c.doc) return undefined;
    return toAuthUser(c.doc);
  }

  private verifiedOn(on: Connection | undefined, username: string, ref: UsernameDoc, doc: UserDoc) {
    if (on && this.peek) this.connections.set(on.connection, { header: on.header, username, ref, doc });
  }

  /**
   * The user of a credential verified before, answered from memory: undefined when that takes
   * `authenticate` (not remembered, or the read models are not in memory). `on`: the connection and
   * header it came with, remembered for `forConnection`.
   */
  cached(username: string, password: string, on?: Connection): AuthUser | undefined {
    if (!this.peek) return undefined;
    const ref = this.peek.peek<UsernameDoc>('usernames', username);
    if (!ref) return undefined;
    const user = this.peek.peek<UserDoc>('users', String(ref.userId));
    if (!user || !user.active || !user.passwordHash) return undefined;
    const mac = this.digest(username, password);
    if (this.verified.get(mac) !== user.passwordHash) return undefined;
    // Touched like `authenticate` does, so the eviction stays least-recently-used.
    this.verified.delete(mac);
    this.verified.set(mac, user.passwordHash);
    this.verifiedOn(on, username, ref, user);
    return toAuthUser(user);
  }

  private async refuse(password: string): Promise<null> {
    this.decoy ??= hashPassword(randomBytes(32).toString('base64'));
    await this.verify(password, await this.decoy);
    return null;
  }

  async authenticate(username: string, password: string, on?: Connection): Promise<AuthUser | null> {
    const ref = await this.reads.get<UsernameDoc>('usernames', username);
    if (!ref) return this.refuse(password);
    const user = await this.reads.get<UserDoc>('users', String(ref.userId));
    if (!user || !user.active || !user.passwordHash) return this.refuse(password);
    const mac = this.digest(username, password);
    const cached = this.verified.get(mac);
    if (cached === user.passwordHash) {
      this.verified.delete(mac);
      this.verified.set(mac, cached);
      this.verifiedOn(on, username, ref, user);
      return toAuthUser(user);
    }
    if (cached !== undefined) this.verified.delete(mac);
    const flightKey = `${mac}|${user.passwordHash}`;
    let pending = this.inFlight.get(flightKey);
    if (!pending) {
      pending = this.verify(password, user.passwordHash).finally(() => this.inFlight.delete(flightKey));
      this.inFlight.set(flightKey, pending);
    }
    if (!(await pending)) return null;
    this.verified.set(mac, user.passwordHash);
    if (this.verified.size > MAX_ENTRIES) this.verified.delete(this.verified.keys().next().value!);
    this.verifiedOn(on, username, ref, user);
    return toAuthUser(user);
  }
}

function toAuthUser(u: UserDoc): AuthUser {
  let user = authUsers.get(u);
  if (user === undefined) {
    user = Object.freeze(newAuthUser(u));
    authUsers.set(u, user);
  }
  return user;
}

function newAuthUser(u: UserDoc): AuthUser {
  return {
    id: u.id,
    username: u.username,
    name: u.name,
    admin: u.admin,
    agentId: u.agentId,
    services: u.services,
    customer: u.customer,
  };
}
