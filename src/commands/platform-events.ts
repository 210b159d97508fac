/**
 * Every event the platform stores, as one union keyed by type name, and the helpers that narrow a
 * stored event (type `string`, data `unknown`) to it. Each aggregate declares its own events next
 * to its decider; this module only gathers them, so it imports from `commands/` and nothing in
 * `commands/` imports it back (a decider folds its own union).
 *
 * Narrowing checks the type name only: the data is trusted to be what that type's events carry,
 * which holds because only the deciders (and provisioning) append, with these very types.
 */
import type { RecordedEvent } from '../gateways/event-store/port.js';
import type { DomainEvent } from './decider.js';
import type { AgentEvent } from './agent/agent.js';
import type { CallEvent } from './call/call.js';
import type { DeliveryEvent } from './delivery/delivery.js';
import type { CampaignEvent, ContactEvent } from './dialer/campaign.js';
import type { OtpEvent } from './otp/otp.js';
import type { ScheduleEvent } from './schedule/schedule.js';
import type { SmsEvent } from './sms/sms.js';
import type { SubscriberEvent } from './subscriber/subscriber.js';
import type { QueueAlertEvent } from './queue-alert/queue-alert.js';
import type { CustomerProvisioned, DeliveryIdsOrdered, RecordingKeyCreated, ServiceProvisioned, UserEvent, UsernameEvent, WorkerFenced, SipPasswordSet } from '../domain/events.js';

export { allTypes } from '../domain/events.js';

export type PlatformEvent =
  | ServiceProvisioned
  | CustomerProvisioned
  | UserEvent
  | UsernameEvent
  | AgentEvent
  | CallEvent
  | SmsEvent
  | OtpEvent
  | ScheduleEvent
  | CampaignEvent
  | ContactEvent
  | SubscriberEvent
  | DeliveryEvent
  | QueueAlertEvent
  | RecordingKeyCreated
  | DeliveryIdsOrdered
  | WorkerFenced
  | SipPasswordSet;

/** Type name -> data, for every event of the platform. */
export type EventMap = { [E in PlatformEvent as E['type']]: E['data'] };
export type EventType = keyof EventMap;

/** The event of a type, or of any of several (a discriminated union on `type`). */
export type EventOf<T extends EventType = EventType> = { [K in T]: DomainEvent<K, EventMap[K]> }[T];
/** The same, as stored (position, stream, time...). */
export type Recorded<T extends EventType = EventType> = { [K in T]: RecordedEvent<K, EventMap[K]> }[T];
/** Data of an event type. */
export type DataOf<T extends EventType> = EventMap[T];

/** Whether an event is of one of these types; narrows it (and its data) when it is. */
export function isEvent<E extends { type: string }, T extends EventType>(e: E, ...types: T[]): e is E & EventOf<T> {
  return (types as string[]).includes(e.type);
}

/** A fixed set of event types, checked against the union, with a fast narrowing test. */
export interface EventTypes<T extends EventType> {
  readonly list: readonly T[];
  has<E extends { type: string }>(e: E): e is E & EventOf<T>;
}

export function eventTypes<T extends EventType>(...list: T[]): EventTypes<T> {
  const set = new Set<string>(list);
  return { list, has: <E extends { type: string }>(e: E): e is E & EventOf<T> => set.has(e.type) };
}

/** A number field (`svcId`, `agentId`) of any event's data, for code that reads every event of the log. */
export function numberField(e: { data: unknown }, name: 'svcId' | 'agentId'): number | undefined {
  const d = e.data;
  if (typeof d !== 'object' || d === null) return undefined;
  const v: unknown = Reflect.get(d, name);
  return typeof v === 'number' ? v : undefined;
}
