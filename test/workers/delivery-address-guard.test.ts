import { describe, expect, it } from 'vitest';
import { guardedLookup, isBlockedAddress } from '../../src/gateways/http-delivery/address-guard.js';

describe('delivery address guard', () => {
  it.each([
    '127.0.0.1', '127.255.0.9', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1', '255.255.255.255',
    '::1', '::', 'fe80::1', 'fe80::1%eth0', 'fc00::1', 'fd12:3456::1', 'ff02::1',
    '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '::ffff:a9fe:a9fe', '::ffff:0:10.0.0.1', '::127.0.0.1', '64:ff9b::a00:1', '2002:c0a8:101::1', '[::1]',
    '::7f00:1', 'fec0::1', '2001::1', '2001:db8::1', '100::1', '192.0.2.1', '198.18.0.1', '203.0.113.9', 'not-an-ip', '1.2.3',
  ])('refuses %s', (a) => {
    expect(isBlockedAddress(a)).toBe(true);
  });

  it.each(['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '::ffff:8.8.8.8', '64:ff9b::8.8.8.8', '2a00:1450:4001::200e', '::808:808', '2002:808:808::1'])('allows %s', (a) => {
    expect(isBlockedAddress(a)).toBe(false);
  });

  it('refuses a name that resolves to loopback, unless private targets are allowed', async () => {
    const lookup = (allow: boolean, all: boolean) =>
      new Promise<unknown>((resolve, reject) => guardedLookup(allow)('localhost', { all }, (err, address) => (err ? reject(err) : resolve(address))));
    await expect(lookup(false, false)).rejects.toThrow(/refused: localhost resolves to/);
    await expect(lookup(false, true)).rejects.toThrow(/WEBHOOK_ALLOW_PRIVATE/);
    expect(await lookup(true, false)).toMatch(/^(127\.0\.0\.1|::1)$/);
    expect(Array.isArray(await lookup(true, true))).toBe(true);
  });
});
