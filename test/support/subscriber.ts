/** A subscriber's registration as the decider's and the projection's tests start from. */
import type { SubscriberRegisteredData } from '../../src/commands/subscriber/subscriber.js';

export const registration = (over: Partial<SubscriberRegisteredData> = {}): SubscriberRegisteredData => ({
  svcId: 101,
  agentId: 0,
  url: 'https://example.test/events',
  authKey: 'whsec_abc',
  deviceId: 'dev-1',
  channelType: 'http',
  eventMask: '111111',
  customEvent: null,
  isRegistered: true,
  force: false,
  time: 1000,
  ...over,
});
