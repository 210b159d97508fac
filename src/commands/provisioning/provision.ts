/**
 * Applies a provisioning document as events, idempotently: a record is written only when it is
 * new or differs from what provisioning last wrote for it, and all writes of one document are
 * appended in one transaction, so a bad or interrupted application leaves nothing half-done.
 */
import { WrongExpectedRevisionError, type EventStore, type RecordedEvent, type StreamAppend } from '../../gateways/event-store/port.js';
import { conflict } from '../../domain/errors.js';
import type {
  AgentProvisionedData,
  CustomerProvisionedData,
  QueueDef,
  ServiceProvisionedData,
  UserEvent,
  UserProvisionedData,
} from '../../domain/events.js';
import { streams } from '../../domain/streams.js';
import { hashPassword, verifyPassword } from '../../domain/password.js';
import { fold, toDomain } from '../decider.js';
import { userDecider } from '../user/user.js';
import { validateProvisioning, type ProvisioningDocument } from './document.js';
import { isEvent, type DataOf, type EventType } from '../platform-events.js';
import { sipPasswordStream } from '../../domain/events.js';

export interface ProvisioningResult {
  services: number;
  agents: number;
  users: number;
  /** Events appended (0 when the document was already applied). */
  appended: number;
  position: number;
}

function lastOf<T extends EventType>(events: RecordedEvent[], type: T): DataOf<T> | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]!;
    if (isEvent(e, type)) return e.data;
  }
  return undefined;
}

/** A queue as stored: the routing fields only when given, so documents applied before them apply as no change. */
function queueDef(q: QueueDef): QueueDef {
  const { id, name, digits, skillId, priority, overflowS, maxWaitS, serviceLevelTarget } = q;
  const optional = Object.entries({ digits, skillId, priority, overflowS, maxWaitS, serviceLevelTarget }).filter(([, v]) => v !== undefined);
  return { id, name, ...Object.fromEntries(optional) };
}

const usernameStream = (username: string) => `username-${username}`;

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

class StreamCache {
  private readonly cache = new Map<string, RecordedEvent[]>();
  constructor(private readonly store: EventStore) {}
  async read(streamId: string): Promise<RecordedEvent[]> {
    let events = this.cache.get(streamId);
    if (!events) {
      events = await this.store.readStream(streamId);
      this.cache.set(streamId, events);
    }
    return events;
  }
  expected(events: RecordedEvent[]) {
    return events.length ? events[events.length - 1]!.revision : ('no_stream' as const);
  }
}

/** Attempts of one document when another one wrote the same records meanwhile. */
const ATTEMPTS = 3;

/**
 * `onProgress` hears (records done, records in the document) as services, agents, customers and users
 * are checked. Documents applied at the same time that write the same records conflict in the event
 * store: the loser is checked again on what the winner wrote, and after ATTEMPTS answers 409.
 */
export async function applyProvisioning(store: EventStore, input: unknown, onProgress?: (done: number, total: number) => void): Promise<ProvisioningResult> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await applyOnce(store, input, onProgress);
    } catch (err) {
      if (!(err instanceof WrongExpectedRevisionError)) throw err;
      if (attempt >= ATTEMPTS) throw conflict('another provisioning document changed the same records at the same time; apply this one again');
    }
  }
}

async function applyOnce(store: EventStore, input: unknown, onProgress?: (done: number, total: number) => void): Promise<ProvisioningResult> {
  const cache = new StreamCache(store);
  // Prefetch what validation needs to know about records provisioned before.
  const raw = (input ?? {}) as Partial<ProvisioningDocument>;
  const serviceCustomers = new Map<number, string>();
  const agentsKnown = new Set<string>();
  const usernames = new Map<string, number>();
  if (Array.isArray(raw.users)) {
    for (const u of raw.users) {
      if (u && Array.isArray(u.services)) {
        for (const svcId of u.services) {
          if (!Number.isInteger(svcId) || svcId < 1) continue;
          const svc = lastOf(await cache.read(streams.service(svcId)), 'ServiceProvisioned');
          if (svc) serviceCustomers.set(svcId, svc.customer);
          if (Number.isInteger(u.agentId) && (u.agentId as number) > 0) {
            const agent = await cache.read(streams.agent(svcId, u.agentId as number));
            if (lastOf(agent, 'AgentProvisioned')) agentsKnown.add(`${svcId}-${u.agentId}`);
          }
        }
      }
      if (u && typeof u.username === 'string' && u.username.length > 0 && u.username.length <= 100) {
        const owner = currentOwner(await cache.read(usernameStream(u.username)));
        if (owner !== undefined) usernames.set(u.username, owner);
      }
    }
  }
  if (Array.isArray(raw.services)) {
    for (const s of raw.services) {
      if (s && Number.isInteger(s.id) && s.id > 0) {
        const svc = lastOf(await cache.read(streams.service(s.id)), 'ServiceProvisioned');
        if (svc) serviceCustomers.set(s.id, svc.customer);
      }
    }
  }
  const doc = validateProvisioning(input, {
    serviceCustomer: (id) => serviceCustomers.get(id),
    agentExists: (svcId, agentId) => agentsKnown.has(`${svcId}-${agentId}`),
    userIdByUsername: (name) => usernames.get(name),
  });

  const total = doc.services.reduce((n, s) => n + 1 + (s.agents?.length ?? 0) + (s.customers?.length ?? 0), 0) + doc.users.length;
  let done = 0;
  const step = () => onProgress?.(++done, total);
  const appends: StreamAppend[] = [];
  const add = async <T extends EventType>(streamId: string, type: T, data: DataOf<T>, changed: (events: RecordedEvent[]) => boolean) => {
    const events = await cache.read(streamId);
    if (!changed(events)) return;
    appends.push({ streamId, events: [{ type, data }], expectedRevision: cache.expected(events) });
  };

  let agentCount = 0;
  for (const s of doc.services) {
    const data: ServiceProvisionedData = {
      svcId: s.id,
      name: s.name,
      customer: s.customer,
      timezone: s.timezone ?? 'UTC',
      dids: s.dids ?? [],
      skills: (s.skills ?? []).map((k) => ({ id: k.id, name: k.name })),
      queues: (s.queues ?? []).map(queueDef),
      webhook: s.webhook ? { url: s.webhook.url, secret: s.webhook.secret } : null,
      socketKey: s.socketKey ?? null,
      blocked: s.blocked ?? [],
      // Left out when unset, so documents applied before calling hours existed still apply as no change.
      ...(s.callingHours ? { callingHours: { from: s.callingHours.from, to: s.callingHours.to } } : {}),
    };
    await add(streams.service(s.id), 'ServiceProvisioned', data, (ev) => !sameJson(lastOf(ev, 'ServiceProvisioned'), data));
    step();
    for (const a of s.agents ?? []) {
      agentCount++;
      const agent: AgentProvisionedData = {
        svcId: s.id,
        agentId: a.id,
        name: a.name,
        number: a.number,
        sip: a.sip ?? `agent-${a.id}`,
        countryCode: a.countryCode ?? '',
        skills: (a.skills ?? []).map((k) => ({ skillId: k.skillId, level: k.level ?? 1 })),
      };
      await add(streams.agent(s.id, a.id), 'AgentProvisioned', agent, (ev) => !sameJson(lastOf(ev, 'AgentProvisioned'), agent));
      if (a.sipPassword !== undefined) {
        const secret = { svcId: s.id, agentId: a.id, password: a.sipPassword };
        await add(sipPasswordStream(s.id, a.id), 'SipPasswordSet', secret, (ev) => !sameJson(lastOf(ev, 'SipPasswordSet'), secret));
      }
      step();
    }
    for (const c of s.customers ?? []) {
      const customer: CustomerProvisionedData = {
        svcId: s.id,
        number: c.number,
        name: c.name ?? '',
        address: c.address ?? '',
        note: c.note ?? '',
        email: c.email ?? null,
        ...(c.dnd === true ? { dnd: true as const } : {}),
        ...(c.priority ? { priority: c.priority } : {}),
      };
      await add(streams.customer(s.id, c.number), 'CustomerProvisioned', customer, (ev) => !sameJson(lastOf(ev, 'CustomerProvisioned'), customer));
      step();
    }
  }

  for (const u of doc.users) {
    const customer = serviceCustomers.get(u.services[0]!) ?? doc.services.find((s) => s.id === u.services[0])!.customer;
    const events = await cache.read(streams.user(u.id));
    const state = fold(userDecider, events.map((e) => toDomain<UserEvent>(e)));
    const samePassword = state.exists && (await verifyPassword(u.password, state.provisionedPasswordHash));
    const data: UserProvisionedData = {
      userId: u.id,
      username: u.username,
      // '' keeps the current hash (and any password the user set since).
      passwordHash: samePassword ? '' : await hashPassword(u.password),
      name: u.name ?? u.username,
      email: u.email ?? '',
      number: u.number ?? '',
      admin: u.admin === true,
      agentId: u.agentId ?? null,
      services: u.services,
      customer,
    };
    const last = lastOf(events, 'UserProvisioned');
    const unchanged = samePassword && last && sameJson({ ...last, passwordHash: '' }, data);
    if (!unchanged) appends.push({ streamId: streams.user(u.id), events: [{ type: 'UserProvisioned', data }], expectedRevision: cache.expected(events) });
    // Usernames are unique: a claim stream per name makes the event store enforce it.
    if (state.exists && state.username !== u.username) {
      const old = await cache.read(usernameStream(state.username));
      appends.push({ streamId: usernameStream(state.username), events: [{ type: 'UsernameReleased', data: { userId: u.id, username: state.username } }], expectedRevision: cache.expected(old) });
    }
    const claim = await cache.read(usernameStream(u.username));
    if (currentOwner(claim) !== u.id) {
      appends.push({ streamId: usernameStream(u.username), events: [{ type: 'UsernameClaimed', data: { userId: u.id, username: u.username } }], expectedRevision: cache.expected(claim) });
    }
    step();
  }

  let position = await store.headPosition();
  if (appends.length > 0) {
    const results = await store.appendToStreams(appends);
    position = Math.max(...results.map((r) => r.position));
  }
  return {
    services: doc.services.length,
    agents: agentCount,
    users: doc.users.length,
    appended: appends.reduce((n, a) => n + a.events.length, 0),
    position,
  };
}

function currentOwner(events: RecordedEvent[]): number | undefined {
  const last = events[events.length - 1];
  return last && isEvent(last, 'UsernameClaimed') ? last.data.userId : undefined;
}
