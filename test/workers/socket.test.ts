/** The event socket over real TCP (CONTRACT sections 7 and 11). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleDoc, startProvisioned, startServer, type TestServer } from '../support/server.js';
import { LineClient, appendLegs, legData } from '../support/socket-client.js';
import { EventSocketServer } from '../../src/workers/socket/server.js';

/** The example document plus service 202 (another customer) with its own socket key. */
function twoServiceDoc() {
  const doc = exampleDoc();
  const svc = structuredClone(doc.services[0]);
  Object.assign(svc, { id: 202, name: 'Globex Sales', customer: 'globex', dids: ['8000000202'], socketKey: 'k-202-secret', customers: [] });
  svc.agents = [{ ...svc.agents[0], id: 2001, number: '9100002001', sip: 'gina', name: 'Gina' }];
  doc.services.push(svc);
  // Service 303 exists but was never given a socket key.
  doc.services.push({ id: 303, name: 'No Events', customer: 'initech', dids: ['8000000303'], socketKey: null });
  return doc;
}

describe('event socket', () => {
  let s: TestServer;
  let port: number;
  const clients: LineClient[] = [];
  const track = async (p: Promise<LineClient>) => {
    const c = await p;
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    s = await startProvisioned();
    const res = await s.ops('/ops/v1/provisioning', { method: 'PUT', json: twoServiceDoc() });
    expect(res.status).toBe(200);
    port = s.platform.socket!.port!;
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await s.stop();
  });

  it('start() reports the socket port', () => {
    expect(port).toBeGreaterThan(0);
  });

  it('accepts the key with Success, then sends each leg event as the spec JSON with exactly its fields', async () => {
    const c = await track(LineClient.authed(port, 101, 'k-101-secret'));
    const ring = legData(101, { data: '12', time: 1_700_000_000_123 });
    await appendLegs(s.platform.ctx.events, [{ type: 'CustomerRing', data: ring }]);
    await appendLegs(s.platform.ctx.events, [{ type: 'AgentUp', data: { ...ring, agentId: 1001, direction: 'Inbound' } }]);
    await c.waitForEvents(2);
    const [first, second] = c.events();
    expect(first).toEqual({ xnid: ring.xnid, event: 'CustomerRing', agent: null, number: '9876543210', time: 1_700_000_000_123, data: '12', svc: '101', type: 'Inbound' });
    expect(Object.keys(first!).sort()).toEqual(['agent', 'data', 'event', 'number', 'svc', 'time', 'type', 'xnid']);
    expect(second).toMatchObject({ event: 'AgentUp', agent: '1001', svc: '101' });
    expect(c.lines[0]).toBe('Success');
  });

  it('a wrong key, an unknown service, a service without a key or a malformed message get Unauthorized and are closed', async () => {
    for (const msg of ['101:wrong\n', '101:\n', '999:k-101-secret\n', '303:\n', '303:anything\n', 'k-101-secret\n', '202:k-101-secret\r\n']) {
      const c = await track(LineClient.connect(port));
      c.send(msg);
      await c.waitClosed();
      expect(c.lines, msg).toEqual(['Unauthorized']);
    }
  });

  it('answers ping before the key (not taken as the key), and after it, with \\n and \\r\\n', async () => {
    const c = await track(LineClient.connect(port));
    c.send('ping\r\n');
    await c.waitForLines(1);
    expect(c.lines).toEqual(['pong']);
    c.send('101:k-101-secret\r\nping\n');
    await c.waitForLines(3);
    expect(c.lines).toEqual(['pong', 'Success', 'pong']);
    c.send('ping\r\n');
    await c.waitForLines(4);
    expect(c.lines[3]).toBe('pong');
    expect(c.closed).toBe(false);
  });

  it('takes a first message without a newline whole after 50 ms of quiet, also ping', async () => {
    const a = await track(LineClient.connect(port));
    a.send('101:k-101');
    a.send('-secret');
    await a.waitForLines(1);
    expect(a.lines).toEqual(['Success']);

    const b = await track(LineClient.connect(port));
    b.send('ping');
    await b.waitForLines(1);
    expect(b.lines).toEqual(['pong']);
    b.send('101:k-101-secret');
    await b.waitForLines(2);
    expect(b.lines).toEqual(['pong', 'Success']);

    const w = await track(LineClient.connect(port));
    w.send('101:nope');
    await w.waitClosed();
    expect(w.lines).toEqual(['Unauthorized']);
  });

  it('two clients see the same events in the same order, which is the log order', async () => {
    const a = await track(LineClient.authed(port, 101, 'k-101-secret'));
    const b = await track(LineClient.authed(port, 101, 'k-101-secret'));
    const calls = [legData(101), legData(101, { direction: 'Outbound' }), legData(101)];
    const expected: string[] = [];
    const kinds = ['CustomerRing', 'CustomerUp', 'AgentRing', 'AgentUp', 'AgentHangup', 'CustomerHangup'] as const;
    for (const kind of kinds) {
      for (const call of calls) {
        await appendLegs(s.platform.ctx.events, [{ type: kind, data: call }]);
        expected.push(`${call.xnid}/${kind}`);
      }
    }
    // Several events of one call in one append keep their order too.
    const d = legData(101);
    await appendLegs(s.platform.ctx.events, kinds.map((type) => ({ type, data: d })));
    expected.push(...kinds.map((k) => `${d.xnid}/${k}`));
    await a.waitForEvents(expected.length);
    await b.waitForEvents(expected.length);
    const seen = (c: LineClient) => c.events().map((e) => `${e.xnid}/${e.event}`);
    expect(seen(a)).toEqual(expected);
    expect(seen(b)).toEqual(expected);
  });

  it("never shows another service's events, nor events that are not leg events", async () => {
    const c101 = await track(LineClient.authed(port, 101, 'k-101-secret'));
    const c202 = await track(LineClient.authed(port, 202, 'k-202-secret'));
    const other = legData(202);
    await appendLegs(s.platform.ctx.events, [{ type: 'CustomerRing', data: other }]);
    await s.platform.ctx.events.appendToStream(`call-${other.xnid}`, [{ type: 'CallEnded', data: { xnid: other.xnid, svcId: 101 } }]);
    const mine = legData(101);
    await appendLegs(s.platform.ctx.events, [{ type: 'CustomerRing', data: mine }]);
    await c101.waitForEvents(1);
    await c202.waitForEvents(1);
    // Log order: the 101 event was stored after the others, so anything else would have come first.
    expect(c101.events().map((e) => e.xnid)).toEqual([mine.xnid]);
    expect(c202.events().map((e) => [e.xnid, e.svc])).toEqual([[other.xnid, '202']]);
  });

  it('sends only events stored after the key was accepted, not earlier ones', async () => {
    const watcher = await track(LineClient.authed(port, 101, 'k-101-secret'));
    const earlier = legData(101);
    await appendLegs(s.platform.ctx.events, [{ type: 'CustomerRing', data: earlier }]);
    await watcher.until(() => watcher.events().some((e) => e.xnid === earlier.xnid), 'the earlier event');
    const late = await track(LineClient.authed(port, 101, 'k-101-secret'));
    const later = legData(101);
    await appendLegs(s.platform.ctx.events, [{ type: 'CustomerRing', data: later }]);
    await late.waitForEvents(1);
    expect(late.events().map((e) => e.xnid)).toEqual([later.xnid]);
  });

  it('closes a connection that sends no accepted key in time', async () => {
    const short = new EventSocketServer(s.platform.ctx, { host: '127.0.0.1', port: 0, authTimeoutMs: 100 });
    const { port: p } = await short.start();
    try {
      const c = await LineClient.connect(p);
      c.send('ping\n');
      await c.waitClosed();
      expect(c.lines).toEqual(['pong']);
      const ok = await LineClient.authed(p, 101, 'k-101-secret');
      await new Promise((r) => setTimeout(r, 200)); // past the timeout: an accepted client stays
      expect(ok.closed).toBe(false);
      ok.close();
    } finally {
      await short.stop();
    }
  });

  it('closes a connection whose line exceeds the bound', async () => {
    const c = await track(LineClient.connect(port));
    c.send('x'.repeat(5000));
    await c.waitClosed();
    expect(c.lines).toEqual([]);
    const d = await track(LineClient.authed(port, 101, 'k-101-secret'));
    d.send('y'.repeat(5000) + '\n');
    await d.waitClosed();
  });

  it('cuts off a client that never reads, while a fast one keeps receiving everything', async () => {
    const socket = s.platform.socket!;
    const before = socket.stats().slowDisconnects;
    const fast = await track(LineClient.authed(port, 101, 'k-101-secret'));
    const slow = await track(LineClient.authed(port, 101, 'k-101-secret'));
    slow.socket.pause(); // never reads again: the kernel buffers fill, then the server's
    const big = 'd'.repeat(4000);
    let sent = 0;
    // Rounds of 400 kB; the fast client reads each round before the next is stored.
    for (let round = 0; round < 200 && socket.stats().slowDisconnects === before; round++) {
      const call = legData(101, { data: big });
      await appendLegs(s.platform.ctx.events, Array.from({ length: 100 }, () => ({ type: 'CustomerUp' as const, data: call })));
      sent += 100;
      await fast.waitForEvents(sent, 10_000);
    }
    expect(socket.stats().slowDisconnects).toBe(before + 1);
    // After the cut-off the fast client still gets new events.
    await appendLegs(s.platform.ctx.events, [{ type: 'CustomerHangup', data: legData(101) }]);
    sent += 1;
    await fast.waitForEvents(sent);
    expect(fast.events()).toHaveLength(sent);
    expect(fast.closed).toBe(false);
    // The slow one was reset: reading resumes and finds the connection gone, with events missing.
    slow.socket.resume();
    await slow.waitClosed(10_000);
    expect(slow.events().length).toBeLessThan(sent);
  });
});

describe('event socket lifecycle', () => {
  it('a graceful stop closes the server and its clients', async () => {
    const s = await startProvisioned();
    const port = s.platform.socket!.port!;
    const c = await LineClient.authed(port, 101, 'k-101-secret');
    await s.stop();
    await c.waitClosed();
    await expect(LineClient.connect(port)).rejects.toThrow();
  });

  it('is not started without the socket role', async () => {
    const s = await startServer({ ROLES: 'api,projector' });
    expect(s.platform.socket).toBeNull();
    await s.stop();
  });
});
