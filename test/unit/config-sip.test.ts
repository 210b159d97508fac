/** The SIP switch's settings (CONTRACT 16): defaults, SIP_TRUNK's forms, and the lines a bad one gives. */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('SWITCH and SIP_* settings', () => {
  it('defaults to the simulator; SWITCH=sip takes its address from HOST and needs only SIP_TRUNK', () => {
    expect(loadConfig({}).switch).toEqual({ kind: 'sim' });
    expect(loadConfig({ HOST: '10.1.2.3', SWITCH: 'sip', SIP_TRUNK: 'sbc.example.net' }).switch).toEqual({
      kind: 'sip', host: '10.1.2.3', port: 5060, domain: '10.1.2.3', trunk: { transport: 'udp', host: 'sbc.example.net', port: 5060 }, ringTimeoutMs: 30000,
    });
    expect(loadConfig({ SWITCH: 'SIP', SIP_HOST: '0.0.0.0', SIP_PORT: '5080', SIP_DOMAIN: 'pbx.example.com', SIP_TRUNK: '[2001:db8::1]:5070;transport=tcp', SIP_RING_TIMEOUT_MS: '15000' }).switch).toEqual({
      kind: 'sip', host: '0.0.0.0', port: 5080, domain: 'pbx.example.com', trunk: { transport: 'tcp', host: '2001:db8::1', port: 5070 }, ringTimeoutMs: 15000,
    });
  });

  it.each([
    [{ SWITCH: 'sip' }, /^SIP_TRUNK is required with SWITCH=sip/],
    [{ SWITCH: 'freeswitch' }, /^SWITCH must be sim or sip, got "freeswitch"$/],
    [{ SWITCH: 'sip', SIP_TRUNK: 'sbc:99999' }, /^SIP_TRUNK must be host:port/],
    [{ SWITCH: 'sip', SIP_TRUNK: 'sip:sbc;transport=sctp' }, /^SIP_TRUNK must be host:port/],
    [{ SWITCH: 'sip', SIP_TRUNK: 'sbc', SIP_PORT: 'x' }, /^SIP_PORT must be/],
    [{ SWITCH: 'sip', SIP_TRUNK: 'sbc', SIP_RING_TIMEOUT_MS: '0' }, /^SIP_RING_TIMEOUT_MS must be at least 1$/],
  ])('%o is a ConfigError naming the setting', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});
