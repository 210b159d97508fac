/**
 * Read model `subscribers`: one document per (service, agent), id `${svcId}-${agentId}` (agent 0 =
 * service-wide), whose fields are exactly the spec's subscriber record. Deliveries read it.
 *
 * - `id` is the global log position of the identity's first registration: an integer, unique
 *   across services, stable under replay, kept when a forced registration replaces the subscriber.
 * - `registered` and `is_registered` both say whether delivery is on (`is-registered`).
 * - `event_mask` is the integer of the six 0/1 digits (`000010` → 10); `maskFromInteger` reverses it.
 * - `register_time` is the last (re)registration, `updated_time` the last change, both epoch ms.
 */
import { SUBSCRIBER_EVENT_TYPES, maskFromInteger, maskToInteger, subscriberDecider, type SubscriberState } from '../commands/subscriber/subscriber.js';
import { projection, type Projection } from './projection.js';

export interface SubscriberDoc extends Record<string, unknown> {
  id: number;
  force: boolean;
  url: string;
  registered: boolean;
  is_registered: boolean;
  agent_id: number;
  svc_id: number;
  auth_key: string;
  device_id: string;
  channel_type: string;
  register_time: number;
  updated_time: number;
  event_mask: number;
  custom_event: string | null;
}

export const subscriberDocId = (svcId: number, agentId: number) => `${svcId}-${agentId}`;

function toState(doc: SubscriberDoc | null): SubscriberState {
  if (!doc) return subscriberDecider.initialState();
  return {
    exists: true,
    svcId: doc.svc_id,
    agentId: doc.agent_id,
    url: doc.url,
    authKey: doc.auth_key,
    deviceId: doc.device_id,
    channelType: doc.channel_type,
    eventMask: maskFromInteger(doc.event_mask),
    customEvent: doc.custom_event,
    isRegistered: doc.is_registered,
    force: doc.force,
    registerTime: doc.register_time,
    updatedTime: doc.updated_time,
  };
}

export const subscribersProjection: Projection<SubscriberDoc> = projection({
  name: 'subscribers',
  canHandle: SUBSCRIBER_EVENT_TYPES,
  keys: (e) => [subscriberDocId(e.data.svcId, e.data.agentId)],
  evolve(doc, e) {
    // The aggregate's own evolve: the read model cannot drift from what the decider sees.
    const s = subscriberDecider.evolve(toState(doc), e);
    if (!s.exists) return doc;
    return {
      id: doc?.id ?? e.position,
      force: s.force,
      url: s.url,
      registered: s.isRegistered,
      is_registered: s.isRegistered,
      agent_id: s.agentId,
      svc_id: s.svcId,
      auth_key: s.authKey,
      device_id: s.deviceId,
      channel_type: s.channelType,
      register_time: s.registerTime,
      updated_time: s.updatedTime,
      event_mask: maskToInteger(s.eventMask),
      custom_event: s.customEvent,
    };
  },
});
