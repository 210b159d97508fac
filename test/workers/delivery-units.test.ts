import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { subscriberWants, type SubscriberDoc } from '../../src/workers/delivery/planner.js';
import { signedHeaders, signingKey } from '../../src/gateways/http-delivery/signing.js';

const sub = (over: Partial<SubscriberDoc> = {}): SubscriberDoc => ({
  id: 1, url: 'http://x/h', is_registered: true, agent_id: 0, svc_id: 101, auth_key: 'k', channel_type: 'http', event_mask: 111111, ...over,
});

describe('subscriberWants', () => {
  it('reads the mask as digits left-padded to six, as integer or string; absent means all', () => {
    expect(subscriberWants(sub({ event_mask: 10 }), 'AgentUp', null)).toBe(true);
    expect(subscriberWants(sub({ event_mask: 10 }), 'AgentHangup', null)).toBe(false);
    expect(subscriberWants(sub({ event_mask: '000010' }), 'AgentUp', null)).toBe(true);
    expect(subscriberWants(sub({ event_mask: 100000 }), 'CustomerRing', null)).toBe(true);
    expect(subscriberWants(sub({ event_mask: 0 }), 'CustomerRing', null)).toBe(false);
    expect(subscriberWants(sub({ event_mask: null }), 'CustomerHangup', null)).toBe(true);
  });
  it('filters by agent, registration and channel', () => {
    expect(subscriberWants(sub({ agent_id: 5 }), 'AgentUp', 5)).toBe(true);
    expect(subscriberWants(sub({ agent_id: 5 }), 'AgentUp', 6)).toBe(false);
    expect(subscriberWants(sub({ agent_id: 5 }), 'CustomerRing', null)).toBe(false);
    expect(subscriberWants(sub({ is_registered: false }), 'AgentUp', null)).toBe(false);
    expect(subscriberWants(sub({ channel_type: 'webhook' }), 'AgentUp', null)).toBe(true);
    expect(subscriberWants(sub({ channel_type: 'socket' }), 'AgentUp', null)).toBe(false);
  });
});

describe('signing', () => {
  it('matches the standardwebhooks reference for whsec_ and raw keys', () => {
    const body = JSON.stringify({ a: 1, b: 'é' });
    const ts = Math.floor(Date.now() / 1000);
    const whsec = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    expect(signedHeaders(whsec, 'msg_1', ts, body)['webhook-signature']).toBe(new Webhook(whsec).sign('msg_1', new Date(ts * 1000), body));
    expect(new Webhook(signingKey('plain-key'), { format: 'raw' }).verify(body, signedHeaders('plain-key', 'm2', ts, body))).toEqual({ a: 1, b: 'é' });
  });
  it('signs with each secret\'s own key however often it is used (keys are decoded once and kept)', () => {
    const body = '{"x":1}';
    const ts = 1_700_000_000;
    const a = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const b = 'whsec_dGhlIG90aGVyIGtleSBhZnRlciBhIHJvdGF0aW9u';
    for (let i = 0; i < 3; i++) {
      expect(signedHeaders(a, 'm', ts, body)['webhook-signature']).toBe(new Webhook(a).sign('m', new Date(ts * 1000), body));
      expect(signedHeaders(b, 'm', ts, body)['webhook-signature']).toBe(new Webhook(b).sign('m', new Date(ts * 1000), body));
    }
    expect(signedHeaders(a, 'm', ts, body)['webhook-signature']).not.toBe(signedHeaders(b, 'm', ts, body)['webhook-signature']);
  });
});
