/**
 * The subscriber aggregate (`subscriber-<svcId>-<agentId>`, agentId 0 = service-wide): one event
 * subscriber per (service, agent), CONTRACT sections 7 and 11.
 *
 * A registration for an identity that exists is refused unless `force` is set, which replaces it.
 * The registration can then be paused/resumed (`is-registered`) and its event mask changed.
 */
import type { Decider, DomainEvent } from '../decider.js';
import { conflict, invalid, notFound } from '../../domain/errors.js';
import { allTypes } from '../../domain/events.js';

/** Channel types a subscriber may use (`webhook` is an alias of `http`). */
export const SUBSCRIBER_CHANNEL_TYPES = ['http', 'webhook'] as const;

/** Mask when none is given: every leg event kind. */
export const DEFAULT_EVENT_MASK = '111111';

/**
 * A request's `event-mask` (1 to 6 digits of 0/1, also given as the integer they spell) as the
 * six-digit mask, left-padded with zeros; null when it is not one.
 */
export function parseEventMask(raw: string): string | null {
  const s = raw.trim();
  return /^[01]{1,6}$/.test(s) ? s.padStart(6, '0') : null;
}

/** The six-digit mask as the integer the subscriber record shows (`000010` → 10). */
export const maskToInteger = (mask: string): number => Number.parseInt(mask, 10);

/** The integer of a subscriber record back to the six-digit mask (10 → `000010`). */
export const maskFromInteger = (n: number): string => String(n).padStart(6, '0');

export interface SubscriberRegistration {
  url: string;
  authKey: string;
  deviceId: string;
  /** As given, lower-cased: `http` or `webhook`. */
  channelType: string;
  /** Six digits of 0/1. */
  eventMask: string;
  customEvent: string | null;
  isRegistered: boolean;
  /** The `force` flag of the registration. */
  force: boolean;
}

export interface SubscriberRegisteredData extends SubscriberRegistration {
  svcId: number;
  agentId: number;
  /** Epoch ms. */
  time: number;
}

export type SubscriberRegistered = DomainEvent<'SubscriberRegistered', SubscriberRegisteredData>;
/** A forced registration over an existing one: the new registration replaces it whole. */
export type SubscriberReplaced = DomainEvent<'SubscriberReplaced', SubscriberRegisteredData>;
export type SubscriberRegistrationToggled = DomainEvent<'SubscriberRegistrationToggled', { svcId: number; agentId: number; isRegistered: boolean; time: number }>;
export type SubscriberMaskChanged = DomainEvent<'SubscriberMaskChanged', { svcId: number; agentId: number; eventMask: string; time: number }>;

export type SubscriberEvent = SubscriberRegistered | SubscriberReplaced | SubscriberRegistrationToggled | SubscriberMaskChanged;

export const SUBSCRIBER_EVENT_TYPES = allTypes<SubscriberEvent['type']>({
  SubscriberRegistered: true,
  SubscriberReplaced: true,
  SubscriberRegistrationToggled: true,
  SubscriberMaskChanged: true,
});

export type SubscriberState =
  | { exists: false }
  | (SubscriberRegistration & { exists: true; svcId: number; agentId: number; registerTime: number; updatedTime: number });

export type SubscriberCommand =
  | ({ type: 'RegisterSubscriber'; svcId: number; agentId: number; time: number } & SubscriberRegistration)
  | { type: 'UpdateSubscriber'; svcId: number; agentId: number; isRegistered?: boolean; eventMask?: string; time: number };

const who = (svcId: number, agentId: number) => (agentId === 0 ? `service ${svcId}` : `service ${svcId}, agent ${agentId}`);

export const subscriberDecider: Decider<SubscriberCommand, SubscriberState, SubscriberEvent> = {
  initialState: () => ({ exists: false }),
  evolve(state, event) {
    switch (event.type) {
      case 'SubscriberRegistered':
      case 'SubscriberReplaced': {
        const { time, ...rest } = event.data;
        return { ...rest, exists: true, registerTime: time, updatedTime: time };
      }
      case 'SubscriberRegistrationToggled':
        return state.exists ? { ...state, isRegistered: event.data.isRegistered, updatedTime: event.data.time } : state;
      case 'SubscriberMaskChanged':
        return state.exists ? { ...state, eventMask: event.data.eventMask, updatedTime: event.data.time } : state;
    }
  },
  decide(command, state) {
    const { svcId, agentId, time } = command;
    switch (command.type) {
      case 'RegisterSubscriber': {
        if (!/^[01]{6}$/.test(command.eventMask)) throw invalid('event-mask must be 1 to 6 digits of 0 and 1');
        if (state.exists && !command.force) throw conflict(`a subscriber for ${who(svcId, agentId)} exists; force=true replaces it`);
        const data: SubscriberRegisteredData = {
          svcId,
          agentId,
          url: command.url,
          authKey: command.authKey,
          deviceId: command.deviceId,
          channelType: command.channelType,
          eventMask: command.eventMask,
          customEvent: command.customEvent,
          isRegistered: command.isRegistered,
          force: command.force,
          time,
        };
        return [state.exists ? { type: 'SubscriberReplaced', data } : { type: 'SubscriberRegistered', data }];
      }
      case 'UpdateSubscriber': {
        if (!state.exists) throw notFound(`no subscriber for ${who(svcId, agentId)}`);
        const events: SubscriberEvent[] = [];
        if (command.isRegistered !== undefined && command.isRegistered !== state.isRegistered) {
          events.push({ type: 'SubscriberRegistrationToggled', data: { svcId, agentId, isRegistered: command.isRegistered, time } });
        }
        if (command.eventMask !== undefined && command.eventMask !== state.eventMask) {
          if (!/^[01]{6}$/.test(command.eventMask)) throw invalid('event-mask must be 1 to 6 digits of 0 and 1');
          events.push({ type: 'SubscriberMaskChanged', data: { svcId, agentId, eventMask: command.eventMask, time } });
        }
        return events;
      }
    }
  },
};
