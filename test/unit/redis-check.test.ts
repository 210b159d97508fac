/** The test run's Redis probe (test/support/redis-global.ts) answers within its deadline either way. */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { redisAnswers } from '../support/redis-global.js';

describe('redisAnswers', () => {
  it('is false within about a second when nothing listens, or when something silent does', async () => {
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const closedPort = (closed.address() as net.AddressInfo).port;
    await new Promise((r) => closed.close(r));
    // A listener that accepts and never answers: the case that used to hang for minutes.
    const held: net.Socket[] = [];
    const silent = net.createServer((socket) => void held.push(socket));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const silentPort = (silent.address() as net.AddressInfo).port;
    try {
      for (const port of [closedPort, silentPort]) {
        const started = Date.now();
        expect(await redisAnswers(`redis://127.0.0.1:${port}`, 500)).toBe(false);
        expect(Date.now() - started).toBeLessThan(2_000);
      }
    } finally {
      for (const socket of held) socket.destroy();
      silent.close();
    }
  });
});
