/**
 * Checks HTTP Basic credentials against the users read model. scrypt takes ~50 ms, so a verified
 * credential is remembered under an HMAC of (username, password) with a per-process key, together
 * with the hash it matched: a password change replaces the hash and so voids the entry. Concurrent
 * first requests with one credential share a single verification.
 *
 * An unknown username, a deactivated user and a wrong password cost the same: each runs one scrypt
 * verification (against a throwaway hash when there is no user), and hashes are compared in
 * constant time, so timing does not tell which usernames exist.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { ReadStore } from '../../gateways/read-store/port.js';
import { hashPassword, verifyPassword } from '../../domain/password.js';
import type { UserDoc, UsernameDoc } from '../../projections/users.js';
import type { AuthUser } from '../../domain/auth-user.js';


const MAX_ENTRIES = 10_000;

export class Authenticator {
  private readonly key = randomBytes(32);
  /** credential HMAC -> password hash it was verified against. Map order gives LRU eviction. */
  private readonly verified = new Map<string, string>();
  private readonly inFlight = new Map<string, Promise<boolean>>();
  /** A hash no password matches, verified against when there is no user: the same work as a wrong password. */
  private decoy: Promise<string> | null = null;

  constructor(
    private readonly reads: ReadStore,
    private readonly verify: (password: string, hash: string) => Promise<boolean> = verifyPassword,
  ) {}

  private async refuse(password: string): Promise<null> {
    this.decoy ??= hashPassword(randomBytes(32).toString('base64'));
    await this.verify(password, await this.decoy);
    return null;
  }

  async authenticate(username: string, password: string): Promise<AuthUser | null> {
    const ref = await this.reads.get<UsernameDoc>('usernames', username);
    if (!ref) return this.refuse(password);
    const user = await this.reads.get<UserDoc>('users', String(ref.userId));
    if (!user || !user.active || !user.passwordHash) return this.refuse(password);
    const mac = createHmac('sha256', this.key).update(username).update('\u0000').update(password).digest('base64');
    const cached = this.verified.get(mac);
    if (cached === user.passwordHash) {
      this.verified.delete(mac);
      this.verified.set(mac, cached);
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
    return toAuthUser(user);
  }
}

function toAuthUser(u: UserDoc): AuthUser {
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
