/** Event vocabulary shared by commands, projections and workers. */
import type { CallingHours } from './calling-hours.js';

/** An event as deciders make and fold it: its type and its data. */
export interface DomainEvent<T extends string = string, D = unknown> {
  type: T;
  data: D;
}

/**
 * Every type name of a union, as a list, complete and exact at compile time: a type added to the
 * union and not here (or named here and not in it) fails to compile.
 * `allTypes<UserEvent['type']>({ UserProvisioned: true, ... })`.
 */
export const allTypes = <T extends string>(names: Record<T, true>): T[] => Object.keys(names) as T[];

export interface SkillDef {
  id: number;
  name: string;
}
/** A queue; the routing fields (CONTRACT section 17) are present only when provisioned. */
export interface QueueDef {
  id: number;
  name: string;
  /** IVR digits that choose this queue (the longest prefix of the caller's digits wins). */
  digits?: string;
  /** Callers are offered to agents with this skill (highest level first). */
  skillId?: number;
  /** Higher first; absent: 0. */
  priority?: number;
  /** After this wait any free agent may take a caller too; absent: never. */
  overflowS?: number;
  /** Alert while a caller has waited longer. */
  maxWaitS?: number;
  /** Alert while the 15-minute service level (percent) is below. */
  serviceLevelTarget?: number;
}
export interface AgentSkill {
  skillId: number;
  level: number;
}

export interface ServiceProvisionedData {
  svcId: number;
  name: string;
  customer: string;
  timezone: string;
  dids: string[];
  skills: SkillDef[];
  queues: QueueDef[];
  webhook: { url: string; secret: string } | null;
  socketKey: string | null;
  blocked: string[];
  /** Present only when set (CONTRACT section 15): the dialer and scheduled calls wait for them. */
  callingHours?: CallingHours;
}

export interface AgentProvisionedData {
  svcId: number;
  agentId: number;
  name: string;
  number: string;
  sip: string;
  countryCode: string;
  skills: AgentSkill[];
}

export interface CustomerProvisionedData {
  svcId: number;
  number: string;
  name: string;
  address: string;
  note: string;
  email: string | null;
  /** Present (true) only when the customer asked not to be called (CONTRACT section 15). */
  dnd?: true;
  /** Present only when not 0: callers with a higher priority are served first (CONTRACT section 17). */
  priority?: number;
}

export interface UserProvisionedData {
  userId: number;
  username: string;
  passwordHash: string;
  name: string;
  email: string;
  number: string;
  admin: boolean;
  agentId: number | null;
  services: number[];
  customer: string;
}

export type ServiceProvisioned = DomainEvent<'ServiceProvisioned', ServiceProvisionedData>;
export type AgentProvisioned = DomainEvent<'AgentProvisioned', AgentProvisionedData>;
/**
 * An agent's SIP password (CONTRACT 16), on a stream of its own (`sip-password-<svcId>-<agentId>`)
 * that no projection, live stream or read answers from: only the SIP registrar reads it.
 */
export type SipPasswordSet = DomainEvent<'SipPasswordSet', { svcId: number; agentId: number; password: string }>;
export const sipPasswordStream = (svcId: number, agentId: number) => `sip-password-${svcId}-${agentId}`;
export type CustomerProvisioned = DomainEvent<'CustomerProvisioned', CustomerProvisionedData>;
export type UserProvisioned = DomainEvent<'UserProvisioned', UserProvisionedData>;
export type UserPasswordChanged = DomainEvent<'UserPasswordChanged', { userId: number; passwordHash: string }>;
export type UserProfileUpdated = DomainEvent<'UserProfileUpdated', { userId: number; email?: string; number?: string }>;

export type UserEvent = UserProvisioned | UserPasswordChanged | UserProfileUpdated;
export const USER_EVENT_TYPES = allTypes<UserEvent['type']>({ UserProvisioned: true, UserPasswordChanged: true, UserProfileUpdated: true });

/** A username's claim stream (`username-<name>`): who holds the name; the event store keeps it unique. */
export type UsernameEvent =
  | DomainEvent<'UsernameClaimed', { userId: number; username: string }>
  | DomainEvent<'UsernameReleased', { userId: number; username: string }>;

/** The recording-signing key (stream `platform-keys`), base64. */
export type RecordingKeyCreated = DomainEvent<'RecordingKeyCreated', { key: string }>;
/** Deliveries caused by events from position `from` on have time-ordered ids (workers/delivery/id-order.ts). */
export type DeliveryIdsOrdered = DomainEvent<'DeliveryIdsOrdered', { from: number }>;
/** A worker holding's fencing token (stream `worker-fence`, gateways/event-store/fence.ts): older holdings' appends are refused from here on. */
export type WorkerFenced = DomainEvent<'WorkerFenced', { token: number }>;
