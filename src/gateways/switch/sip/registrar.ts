/**
 * The registrar of agents' phones (CONTRACT 16): REGISTER for `sip:<agent's sip>@SIP_DOMAIN`,
 * MD5 digest with realm SIP_DOMAIN; a binding lasts its Expires (at most 3600 s) and is kept where
 * every worker sees it (SipAccounts). Failed attempts are limited per source address and per
 * username, so a guessing run is cut off long before it gets anywhere; an unknown username is
 * challenged like a known one, so the answers do not tell which exist.
 */
import { header, headerValues, parseNameAddr, parseUri, type SipRequest } from './message.js';
import { challenge, digestMatches, Nonces, parseAuthorization } from './digest.js';
import type { ServerTx } from './transactions.js';
import type { Peer } from './transport.js';

export const MAX_EXPIRES_S = 3600;
export const FAILURE_WINDOW_MS = 10 * 60_000;
export const MAX_FAILURES_PER_ADDRESS = 20;
export const MAX_FAILURES_PER_USER = 10;

export interface Binding {
  user: string;
  contact: string;
  /** Where requests go instead of the contact's address: the phone is behind NAT (null: the contact itself). */
  flow: Peer | null;
  expiresAt: number;
}

/** The platform's side of SIP accounts: agents' passwords, and bindings every worker sees. */
export interface SipAccounts {
  /** The password of the agent whose `sip` is this username; null when there is none (or more than one agent has it). */
  password(user: string): Promise<string | null>;
  /** Stores a binding, or with null removes the user's. */
  saveBinding(user: string, binding: Binding | null): Promise<void>;
  /** Where the agent with this number is rung: its own SIP URI, or its live binding; null: through the trunk. */
  locate(number: string): Promise<{ uri: string; flow: Peer | null } | null>;
}

export interface RegistrarDeps {
  domain: string;
  /** Other names of this registrar (its address) a phone may put in the To header. */
  aliases: string[];
  accounts: SipAccounts;
  now: () => number;
  respond(tx: ServerTx, status: number, reason: string, extra?: Array<[string, string]>): void;
}

class FailureCounter {
  private readonly counts = new Map<string, { n: number; since: number }>();
  constructor(private readonly max: number, private readonly now: () => number) {}
  blocked(key: string): boolean {
    const c = this.counts.get(key);
    if (!c || this.now() - c.since > FAILURE_WINDOW_MS) return false;
    return c.n >= this.max;
  }
  add(key: string) {
    const t = this.now();
    if (this.counts.size > 50_000) for (const [k, c] of this.counts) if (t - c.since > FAILURE_WINDOW_MS) this.counts.delete(k);
    const c = this.counts.get(key);
    if (!c || t - c.since > FAILURE_WINDOW_MS) this.counts.set(key, { n: 1, since: t });
    else c.n++;
  }
}

export class Registrar {
  private readonly nonces: Nonces;
  private readonly byAddress: FailureCounter;
  private readonly byUser: FailureCounter;

  constructor(private readonly deps: RegistrarDeps) {
    this.nonces = new Nonces(deps.now);
    this.byAddress = new FailureCounter(MAX_FAILURES_PER_ADDRESS, deps.now);
    this.byUser = new FailureCounter(MAX_FAILURES_PER_USER, deps.now);
  }

  async register(req: SipRequest, tx: ServerTx): Promise<void> {
    const { respond, domain } = this.deps;
    const to = parseUri(parseNameAddr(header(req, 'to') ?? '')?.uri ?? '');
    const user = to?.user ?? null;
    if (!to || !user || (to.host.toLowerCase() !== domain.toLowerCase() && !this.deps.aliases.includes(to.host))) return respond(tx, 404, 'Not Found');
    const source = tx.source.host;
    if (this.byAddress.blocked(source) || this.byUser.blocked(user)) return respond(tx, 403, 'Forbidden');
    const auth = parseAuthorization(header(req, 'authorization'));
    const ask = (stale: boolean) => respond(tx, 401, 'Unauthorized', [['www-authenticate', challenge(domain, this.nonces.make(), stale)]]);
    if (!auth) return ask(false);
    const nonce = this.nonces.check(auth.nonce ?? '');
    if (nonce === 'bad') return ask(false);
    const password = auth.username === user && auth.realm === domain ? await this.deps.accounts.password(user) : null;
    if (password === null || !digestMatches(auth, 'REGISTER', password)) {
      this.byAddress.add(source);
      this.byUser.add(user);
      return respond(tx, 403, 'Forbidden');
    }
    // The right password on an expired nonce: the phone asks again with a fresh one (RFC 2617 stale).
    if (nonce === 'stale') return ask(true);
    const contacts = headerValues(req, 'contact');
    const expiresHeader = header(req, 'expires');
    if (contacts.length === 0) return respond(tx, 200, 'OK');
    if (contacts[0] === '*') {
      await this.deps.accounts.saveBinding(user, null);
      return respond(tx, 200, 'OK');
    }
    const contact = parseNameAddr(contacts[0]!);
    if (!contact || !parseUri(contact.uri)) return respond(tx, 400, 'Bad Request (Contact)');
    const asked = Number(contact.params.get('expires') ?? expiresHeader ?? MAX_EXPIRES_S);
    const expires = Number.isFinite(asked) && asked >= 0 ? Math.min(Math.floor(asked), MAX_EXPIRES_S) : MAX_EXPIRES_S;
    if (expires === 0) {
      await this.deps.accounts.saveBinding(user, null);
      return respond(tx, 200, 'OK');
    }
    // A phone behind NAT names an address it cannot be reached at: it is reached where its REGISTER came from (RFC 3581).
    const behindNat = parseUri(contact.uri)!.host !== tx.source.host;
    await this.deps.accounts.saveBinding(user, { user, contact: contact.uri, flow: behindNat ? tx.source : null, expiresAt: this.deps.now() + expires * 1000 });
    respond(tx, 200, 'OK', [['contact', `<${contact.uri}>;expires=${expires}`], ['expires', String(expires)]]);
  }
}
