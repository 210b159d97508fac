/** The `subscribers` projection: the spec's subscriber record, built from the subscriber decider's events. */
import { describe, expect, it } from 'vitest';
import type { SubscriberEvent } from '../../../src/commands/subscriber/subscriber.js';
import { subscribersProjection, type SubscriberDoc } from '../../../src/projections/subscribers.js';
import type { RecordedEvent } from '../../../src/gateways/event-store/port.js';
import { registration } from '../../support/subscriber.js';

const reg = registration;

describe('subscribers projection', () => {
  let position = 0;
  const recorded = (e: SubscriberEvent): RecordedEvent => ({
    id: `e${++position}`,
    streamId: `subscriber-${e.data.svcId}-${e.data.agentId}`,
    revision: 0,
    position,
    type: e.type,
    data: e.data,
    metadata: {},
    time: 0,
  });
  const apply = (doc: SubscriberDoc | null, e: SubscriberEvent) => {
    const r = recorded(e);
    expect(subscribersProjection.keys(r)).toEqual([`${e.data.svcId}-${e.data.agentId}`]);
    return subscribersProjection.evolve(doc, r, `${e.data.svcId}-${e.data.agentId}`);
  };

  it('builds exactly the spec record; the id is kept across a replacement', () => {
    const d1 = apply(null, { type: 'SubscriberRegistered', data: reg({ agentId: 1001, eventMask: '000010', customEvent: 'x' }) })!;
    expect(d1).toEqual({
      id: position,
      force: false,
      url: 'https://example.test/events',
      registered: true,
      is_registered: true,
      agent_id: 1001,
      svc_id: 101,
      auth_key: 'whsec_abc',
      device_id: 'dev-1',
      channel_type: 'http',
      register_time: 1000,
      updated_time: 1000,
      event_mask: 10,
      custom_event: 'x',
    });
    const id = d1.id;
    const d2 = apply(d1, { type: 'SubscriberRegistrationToggled', data: { svcId: 101, agentId: 1001, isRegistered: false, time: 1500 } })!;
    expect(d2).toMatchObject({ id, registered: false, is_registered: false, updated_time: 1500, register_time: 1000, event_mask: 10 });
    const d3 = apply(d2, { type: 'SubscriberReplaced', data: reg({ agentId: 1001, force: true, time: 2000 }) })!;
    expect(d3).toMatchObject({ id, force: true, is_registered: true, event_mask: 111111, custom_event: null, register_time: 2000 });
  });

  it('ignores other events', () => {
    expect(subscribersProjection.keys({ ...recorded({ type: 'SubscriberRegistered', data: reg() }), type: 'CustomerRing' })).toEqual([]);
  });
});
