/** The subscriber decider, given/when/then, and its event masks (the projection: test/unit/projections/subscribers.test.ts). */
import { describe, expect, it } from 'vitest';
import {
  maskFromInteger,
  maskToInteger,
  parseEventMask,
  subscriberDecider,
  type SubscriberCommand,
  type SubscriberEvent,
  type SubscriberRegisteredData,
} from '../../../src/commands/subscriber/subscriber.js';
import { deciderSpec } from '../../support/decider-spec.js';
import { registration } from '../../support/subscriber.js';

const { given } = deciderSpec(subscriberDecider);

const reg = registration;

const register = (over: Partial<SubscriberRegisteredData> = {}): SubscriberCommand => ({ type: 'RegisterSubscriber', ...reg(over) });

describe('subscriber decider', () => {
  it('registers a new subscriber', () => {
    given().when(register()).then({ type: 'SubscriberRegistered', data: reg() });
  });

  it('registers with force when none exists', () => {
    given().when(register({ force: true })).then({ type: 'SubscriberRegistered', data: reg({ force: true }) });
  });

  it('refuses a second registration of the same identity without force (409)', () => {
    given({ type: 'SubscriberRegistered', data: reg() }).when(register({ url: 'https://other.test/' })).thenThrows('CONFLICT', /force=true/);
  });

  it('replaces an existing subscriber with force', () => {
    const data = reg({ url: 'https://other.test/', force: true, time: 2000 });
    given({ type: 'SubscriberRegistered', data: reg() }).when(register({ url: 'https://other.test/', force: true, time: 2000 })).then({ type: 'SubscriberReplaced', data });
  });

  it('toggles registration and changes the mask, only when they change', () => {
    const past: SubscriberEvent = { type: 'SubscriberRegistered', data: reg() };
    given(past)
      .when({ type: 'UpdateSubscriber', svcId: 101, agentId: 0, isRegistered: false, time: 5 })
      .then({ type: 'SubscriberRegistrationToggled', data: { svcId: 101, agentId: 0, isRegistered: false, time: 5 } });
    given(past).when({ type: 'UpdateSubscriber', svcId: 101, agentId: 0, isRegistered: true, time: 5 }).thenNothingHappened();
    given(past)
      .when({ type: 'UpdateSubscriber', svcId: 101, agentId: 0, eventMask: '000010', time: 6 })
      .then({ type: 'SubscriberMaskChanged', data: { svcId: 101, agentId: 0, eventMask: '000010', time: 6 } });
    given(past)
      .when({ type: 'UpdateSubscriber', svcId: 101, agentId: 0, isRegistered: false, eventMask: '000001', time: 7 })
      .then(
        { type: 'SubscriberRegistrationToggled', data: { svcId: 101, agentId: 0, isRegistered: false, time: 7 } },
        { type: 'SubscriberMaskChanged', data: { svcId: 101, agentId: 0, eventMask: '000001', time: 7 } },
      );
  });

  it('keeps the six-digit mask invariant (400)', () => {
    given().when(register({ eventMask: '1' })).thenThrows('INVALID_PARAMETER', /event-mask/);
    given({ type: 'SubscriberRegistered', data: reg() })
      .when({ type: 'UpdateSubscriber', svcId: 101, agentId: 0, eventMask: '12', time: 1 })
      .thenThrows('INVALID_PARAMETER', /event-mask/);
  });

  it('refuses to update an unknown subscriber (404)', () => {
    given().when({ type: 'UpdateSubscriber', svcId: 101, agentId: 7, isRegistered: false, time: 1 }).thenThrows('NOT_FOUND', /agent 7/);
  });

  it('state after registration, toggle, mask change and replacement', () => {
    const s = given([
      { type: 'SubscriberRegistered', data: reg() },
      { type: 'SubscriberRegistrationToggled', data: { svcId: 101, agentId: 0, isRegistered: false, time: 2 } },
      { type: 'SubscriberMaskChanged', data: { svcId: 101, agentId: 0, eventMask: '000011', time: 3 } },
    ] as SubscriberEvent[]).state;
    expect(s).toMatchObject({ exists: true, isRegistered: false, eventMask: '000011', registerTime: 1000, updatedTime: 3 });
    const r = subscriberDecider.evolve(s, { type: 'SubscriberReplaced', data: reg({ time: 9, isRegistered: true }) });
    expect(r).toMatchObject({ isRegistered: true, eventMask: '111111', registerTime: 9, updatedTime: 9 });
  });
});

describe('event masks', () => {
  it('parses 1-6 digits of 0/1, left-padding to six', () => {
    expect(parseEventMask('101')).toBe('000101');
    expect(parseEventMask('111111')).toBe('111111');
    expect(parseEventMask('0')).toBe('000000');
    for (const bad of ['', '2', '1111111', '10a', '-1', '1.0']) expect(parseEventMask(bad), bad).toBeNull();
  });

  it('converts between the six digits and the record integer', () => {
    expect(maskToInteger('000010')).toBe(10);
    expect(maskToInteger('111111')).toBe(111111);
    expect(maskFromInteger(10)).toBe('000010');
    expect(maskFromInteger(0)).toBe('000000');
  });
});
