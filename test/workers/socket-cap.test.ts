/**
 * Issue #29 item 9: the event socket's cap of connections from one remote address is a setting
 * (SOCKET_MAX_PER_ADDRESS) and its refusals are counted in /metrics.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProvisioned, type TestServer } from '../support/server.js';
import { LineClient } from '../support/socket-client.js';
import { loadConfig } from '../../src/config.js';

const refusedPerAddress = async (s: TestServer): Promise<number> => {
  const text = await (await s.ops('/metrics')).text();
  const m = /^telephony_socket_refused_total\{reason="per_address"\} (\d+)$/m.exec(text);
  if (!m) throw new Error(`no per_address refusals in /metrics:\n${text.split('\n').filter((l) => l.includes('socket')).join('\n')}`);
  return Number(m[1]);
};

describe('event socket: connections per address', () => {
  let s: TestServer;
  let port: number;
  const clients: LineClient[] = [];
  beforeAll(async () => {
    s = await startProvisioned({ SOCKET_MAX_PER_ADDRESS: '3' });
    port = s.platform.socket!.port!;
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await s.stop();
  });

  it('SOCKET_MAX_PER_ADDRESS: defaults to 1024, at least 1', () => {
    expect(loadConfig({}).socketMaxPerAddress).toBe(1024);
    expect(loadConfig({ SOCKET_MAX_PER_ADDRESS: '5' }).socketMaxPerAddress).toBe(5);
    expect(() => loadConfig({ SOCKET_MAX_PER_ADDRESS: '0' })).toThrow(/SOCKET_MAX_PER_ADDRESS/);
    expect(() => loadConfig({ SOCKET_MAX_PER_ADDRESS: 'many' })).toThrow(/SOCKET_MAX_PER_ADDRESS/);
  });

  it('closes a connection over the cap at once, counts it in /metrics, and takes one again when a place frees', async () => {
    expect(await refusedPerAddress(s)).toBe(0);
    for (let i = 0; i < 3; i++) clients.push(await LineClient.authed(port, 101, 'k-101-secret'));
    const over = await LineClient.connect(port);
    clients.push(over);
    await over.waitClosed(10_000);
    expect(over.lines).toEqual([]);
    expect(await refusedPerAddress(s)).toBe(1);
    // The three inside still work.
    clients[0]!.send('ping\n');
    await clients[0]!.until(() => clients[0]!.lines.includes('pong'), 'pong', 10_000);
    // One leaves: its place is free for the next.
    clients[1]!.close();
    const deadline = Date.now() + 10_000;
    while (s.platform.socket!.stats().connected > 2) {
      if (Date.now() > deadline) throw new Error('the closed client was still counted');
      await new Promise((r) => setTimeout(r, 20));
    }
    clients.push(await LineClient.authed(port, 101, 'k-101-secret'));
    expect(await refusedPerAddress(s)).toBe(1);
  });
});
