/**
 * The resumable event socket (CONTRACT section 14): `<svc>:<key>@<cursor>`, `@now`, `@0`, the
 * `cursor` field, `Invalid cursor`, pacing by the client's own reading; and the connection caps.
 */
import net from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleDoc, startProvisioned, type TestServer } from '../support/server.js';
import { LineClient, appendLegs, legData } from '../support/socket-client.js';
import { EventSocketServer } from '../../src/workers/socket/server.js';
import { randomBytes } from 'node:crypto';
import { CursorCodec } from '../../src/domain/cursor.js';

/** The unsigned form cursors had before they were signed: anyone could make one. */
const unsigned = (svcId: number, position: number) => Buffer.from(`${svcId}.${position}`).toString('base64url');
import { until } from '../support/until.js';

function twoServices() {
  const doc = exampleDoc();
  const svc = structuredClone(doc.services[0]);
  Object.assign(svc, { id: 202, name: 'Globex', customer: 'globex', dids: ['8000000202'], socketKey: 'k-202_secret', customers: [] });
  svc.agents = [{ ...svc.agents[0], id: 2001, number: '9100002001', sip: 'gina', name: 'Gina' }];
  doc.services.push(svc);
  return doc;
}

const strip = (e: Record<string, unknown>) => {
  const { cursor: _c, ...rest } = e;
  return rest;
};

describe('resumable event socket', () => {
  let s: TestServer;
  let port: number;
  const clients: LineClient[] = [];
  const track = async (p: Promise<LineClient>) => {
    const c = await p;
    clients.push(c);
    return c;
  };
  const ring = (svc: number, n: number) => appendLegs(s.platform.ctx.events, [{ type: 'CustomerRing', data: legData(svc, { number: `98765${String(n).padStart(5, '0')}`, time: 1_700_000_000_000 + n }) }]);

  beforeAll(async () => {
    s = await startProvisioned();
    expect((await s.ops('/ops/v1/provisioning', { method: 'PUT', json: twoServices() })).status).toBe(200);
    port = s.platform.socket!.port!;
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    await s.stop();
  });

  it('@0 replays from the beginning then goes live, exactly what a plain client saw, each line with a cursor', async () => {
    const plain = await track(LineClient.authed(port, 101, 'k-101-secret'));
    for (let i = 0; i < 5; i++) {
      await ring(101, i);
      await ring(202, i);
    }
    await plain.waitForEvents(5);
    const resumed = await track(LineClient.authed(port, 101, 'k-101-secret@0'));
    await resumed.waitForEvents(5);
    await ring(101, 5);
    await plain.waitForEvents(6);
    await resumed.waitForEvents(6);
    expect(resumed.events().map(strip)).toEqual(plain.events());
    expect(plain.events().every((e) => !('cursor' in e))).toBe(true);
    const cursors = resumed.events().map((e) => e.cursor);
    expect(cursors.every((c) => typeof c === 'string' && c.length > 0)).toBe(true);
    expect(new Set(cursors).size).toBe(6);
  });

  it('resumes right after a cursor: no gap, no repeat, across a disconnect', async () => {
    const first = await track(LineClient.authed(port, 101, 'k-101-secret@now'));
    for (let i = 10; i < 14; i++) await ring(101, i);
    await first.waitForEvents(4);
    const seen = first.events();
    first.close();
    // Missed while away.
    for (let i = 14; i < 17; i++) await ring(101, i);
    const again = await track(LineClient.authed(port, 101, `k-101-secret@${seen[1]!.cursor}`));
    await again.waitForEvents(5);
    expect(again.events().map((e) => e.number)).toEqual(['9876500012', '9876500013', '9876500014', '9876500015', '9876500016']);
    await ring(101, 17);
    await again.waitForEvents(6);
    expect(again.events().at(-1)!.number).toBe('9876500017');
  });

  it('provisioning refuses a socket key of other characters than letters, digits, - and _, whole, naming the field', async () => {
    for (const key of ['k@101', 'k:101', 'k 101', 'kü']) {
      const doc = twoServices();
      doc.services[1].socketKey = key;
      doc.services[1].name = 'Renamed';
      const res = await s.ops('/ops/v1/provisioning', { method: 'PUT', json: doc });
      expect(res.status, key).toBe(400);
      expect((await res.json()).message).toContain('services[1].socketKey');
    }
    expect((await s.platform.ctx.reads.get<{ name: string }>('services', '202'))!.name).toBe('Globex');
  });

  it('@now sends only what is stored after the key is accepted', async () => {
    const c = await track(LineClient.authed(port, 101, 'k-101-secret@now'));
    await ring(101, 30);
    await c.waitForEvents(1);
    expect(c.events().map((e) => e.number)).toEqual(['9876500030']);
  });

  it('a cursor never given, or given on another service, is Invalid cursor and the connection closes', async () => {
    const other = await track(LineClient.authed(port, 202, 'k-202_secret@now'));
    await ring(202, 40);
    await ring(101, 41);
    await other.waitForEvents(1);
    const of202 = other.events()[0]!.cursor as string;
    const head = await s.platform.ctx.events.headPosition();
    const provisioningEvent = (await s.platform.ctx.events.readAll({ maxCount: 1 }))[0]!.position;
    // A real event of service 101: made up, its cursor names an event boundary of the right
    // service all the same, which is what a log check would accept; only the server's signature tells.
    const of101 = (await s.platform.ctx.events.readAll({ after: head - 5 })).filter((e) => (e.data as { svcId?: number } | null)?.svcId === 101).at(-1)!.position;
    const forged = [unsigned(101, of101), unsigned(101, head + 1000), unsigned(101, provisioningEvent), new CursorCodec(randomBytes(32)).encode(101, of101)];
    // A position past the head, signed by this server (a log restored from an older backup).
    forged.push(s.platform.ctx.cursors.encode(101, head + 1000));
    for (const cursor of [of202, 'garbage', '', ...forged, 'MTAxLjE', '-1']) {
      const c = await track(LineClient.connect(port));
      c.send(`101:k-101-secret@${cursor}\n`);
      await c.waitClosed();
      expect(c.lines, cursor).toEqual(['Invalid cursor']);
    }
    // A wrong key with a cursor is still Unauthorized.
    const wrong = await track(LineClient.connect(port));
    wrong.send(`101:nope@0\n`);
    await wrong.waitClosed();
    expect(wrong.lines).toEqual(['Unauthorized']);
  });

  it('paces a catching-up client by its reading: a large backlog is never a disconnect', async () => {
    // Alone on the server, so the lines it counts are this client's.
    for (const c of clients.splice(0)) c.close();
    await until(() => s.platform.socket!.stats().connected === 0, 'other clients gone');
    // About 13 MB of backlog: far past the 1 MiB that cuts off a slow plain client, and more than
    // the kernel's socket buffers hold, so the server must wait for the reader.
    const batch = Array.from({ length: 200 }, (_, i) => ({ type: 'CustomerRing' as const, data: legData(101, { data: 'x'.repeat(3000) + i }) }));
    for (let i = 0; i < 20; i++) await appendLegs(s.platform.ctx.events, batch.map((b) => ({ ...b, data: { ...b.data, xnid: `${b.data.xnid.slice(0, 30)}${String(i).padStart(6, '0')}` } })));
    const total = (await s.platform.ctx.events.readAll({ maxCount: 1_000_000 })).filter((e) => e.type.startsWith('Customer') || e.type.startsWith('Agent')).filter((e) => (e.data as { svcId: number }).svcId === 101 && /Ring|Up|Hangup$/.test(e.type)).length;
    const raw = net.connect({ port, host: '127.0.0.1' });
    raw.on('error', () => {});
    raw.write('101:k-101-secret@0\n');
    raw.pause(); // a reader that has not started reading
    const stats = () => s.platform.socket!.stats();
    const before = stats();
    // The server stops writing once the socket buffers are full (lines sent stop growing well short
    // of the backlog), and the client stays connected.
    let last = -1;
    await until(() => {
      const sent = stats().linesSent - before.linesSent;
      const settled = sent > 0 && sent === last;
      last = sent;
      return settled;
    }, 'the server to stop writing to a client that does not read', 10_000, 100);
    expect(stats().linesSent - before.linesSent).toBeLessThan(total);
    expect(raw.destroyed).toBe(false);
    // Now read everything: the whole backlog arrives, in order, on the same connection.
    let text = '';
    raw.setEncoding('utf8');
    raw.on('data', (d: string) => (text += d));
    raw.resume();
    await until(() => text.split('\n').filter((l) => l.startsWith('{')).length >= total, `${total} events`, 20_000);
    expect(stats().slowDisconnects).toBe(before.slowDisconnects);
    expect(raw.destroyed).toBe(false);
    raw.destroy();
  }, 60_000);
});

describe('socket connection caps', () => {
  it('caps connections per address and connections without an accepted key', async () => {
    const s = await startProvisioned();
    const server = new EventSocketServer(
      { events: s.platform.ctx.events, reads: s.platform.ctx.reads, sync: s.platform.ctx.sync, cursors: s.platform.ctx.cursors, logger: pino({ level: 'silent' }) },
      { host: '127.0.0.1', port: 0, maxConnectionsPerAddress: 5, maxPendingConnections: 3 },
    );
    const { port } = await server.start();
    const open: LineClient[] = [];
    try {
      // Three without a key fill the pending cap: a fourth is closed at once.
      for (let i = 0; i < 3; i++) open.push(await LineClient.connect(port));
      await until(() => server.stats().connected === 3, 'three connections');
      const fourth = await LineClient.connect(port);
      await fourth.waitClosed();
      expect(server.stats().refused).toBe(1);
      // Accepted keys free the pending slots; the address cap then bounds the rest.
      for (const c of open) {
        c.send('101:k-101-secret\n');
        await c.waitForLines(1);
      }
      for (let i = 0; i < 2; i++) open.push(await LineClient.authed(port, 101, 'k-101-secret'));
      const sixth = await LineClient.connect(port);
      await sixth.waitClosed();
      expect(server.stats()).toMatchObject({ connected: 5, authenticated: 5, refused: 2 });
      // A closed connection gives its place back.
      open.pop()!.close();
      await until(() => server.stats().connected === 4, 'a place freed');
      open.push(await LineClient.authed(port, 101, 'k-101-secret'));
    } finally {
      for (const c of open) c.close();
      await server.stop();
      await s.stop();
    }
  });
});
