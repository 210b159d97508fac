/**
 * The event socket (role `socket`, CONTRACT sections 7 and 11): raw TCP, newline-delimited text.
 *
 * - A client's first message is `<svc_id>:<key>`, checked against the service's `socketKey`
 *   (read model `services`); `Success` lets it in, `Unauthorized` closes the connection.
 * - `ping` is answered `pong` at any time, also before the key (and is then not taken as the key).
 * - Until the key is accepted, text without a newline counts as a whole message once
 *   `firstMessageIdleMs` (50 ms) pass without another byte; afterwards a message is a line.
 * - One catch-up subscription, started at the log head when the server starts, feeds every client:
 *   each leg event is serialised once and written to the clients of its service, in log order.
 * - A client with more than `maxUnsentBytes` (1 MiB) not yet handed to the kernel is cut off
 *   (TCP reset, buffers discarded); nobody else waits for it. The fan-out yields to I/O every
 *   `yieldEveryBytes` written, so a burst of events alone never piles 1 MiB on a client keeping up.
 * - Lines longer than `maxLineChars`, and connections that send no accepted key within
 *   `authTimeoutMs`, are closed.
 * - Resumable clients (CONTRACT section 14: `<svc_id>:<key>@<cursor>`, `@now`, `@0`) get a
 *   subscription of their own from that position, written only as fast as they read (each write
 *   waits for the socket to drain), each event line with its `cursor`. A cursor is valid when it
 *   names an event of the client's service in the log; anything else is `Invalid cursor`.
 * - Connections per remote address, and connections still without an accepted key, are capped:
 *   past a cap a new connection is closed at once.
 *
 * Framing and key syntax: protocol.ts; a connection, its key check, cursor and resumable stream:
 * session.ts; this file accepts, caps, routes messages and fans the live events out.
 */
import net from 'node:net';
import type { Subscription } from '../../gateways/event-store/port.js';
import { isLegEvent, toSocketEvent } from '../../domain/call-events.js';
import { Client, checkKey, cursorPosition, resume, type EventSocketDeps } from './session.js';

export type { EventSocketDeps };

export interface EventSocketOptions {
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  maxUnsentBytes?: number;
  maxLineChars?: number;
  firstMessageIdleMs?: number;
  authTimeoutMs?: number;
  yieldEveryBytes?: number;
  /** Most connections from one remote address (default 1024; SOCKET_MAX_PER_ADDRESS). */
  maxConnectionsPerAddress?: number;
  /** Most connections without an accepted key, all addresses together (default 1024). */
  maxPendingConnections?: number;
}

export interface EventSocketStats {
  connected: number;
  authenticated: number;
  /** Clients cut off for reading too slowly, since start. */
  slowDisconnects: number;
  /** Event lines written to clients, since start. */
  linesSent: number;
  /** Connections closed at once for being over a connection cap, since start (both caps). */
  refused: number;
  /** Of those, refused for being over the cap of one remote address. */
  refusedPerAddress: number;
  /** Of those, refused for being over the cap of connections without an accepted key. */
  refusedPending: number;
}

export class EventSocketServer {
  private readonly server: net.Server;
  private readonly clients = new Set<Client>();
  private readonly bySvc = new Map<number, Set<Client>>();
  private readonly corked: Client[] = [];
  private flushScheduled = false;
  private subscription: Subscription | null = null;
  private pumping: Promise<void> | null = null;
  private stopping = false;
  private readonly opts: Required<EventSocketOptions>;
  private counters = { slowDisconnects: 0, linesSent: 0, refusedPerAddress: 0, refusedPending: 0 };
  private readonly perAddress = new Map<string, number>();
  private pendingCount = 0;
  private readonly streams = new Set<Promise<void>>();

  constructor(
    private readonly deps: EventSocketDeps,
    options: EventSocketOptions,
  ) {
    this.opts = {
      maxUnsentBytes: 1024 * 1024,
      maxLineChars: 4096,
      firstMessageIdleMs: 50,
      authTimeoutMs: 30_000,
      yieldEveryBytes: 256 * 1024,
      maxConnectionsPerAddress: 1024,
      maxPendingConnections: 1024,
      ...options,
    };
    this.server = net.createServer((socket) => this.accept(socket));
    this.server.on('error', (err) => deps.logger.error({ err }, 'event socket server error'));
  }

  /** Subscribes at the log head, then listens; resolves with the bound address. */
  async start(): Promise<{ host: string; port: number }> {
    const head = await this.deps.events.headPosition();
    this.subscription = this.deps.events.subscribeToAll({ after: head });
    this.pumping = this.pump(this.subscription);
    try {
      await new Promise<void>((resolve, reject) => {
        this.server.once('error', reject);
        this.server.listen({ host: this.opts.host, port: this.opts.port }, () => {
          this.server.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      this.stopping = true;
      this.subscription.close();
      throw err;
    }
    const addr = this.server.address() as net.AddressInfo;
    this.deps.logger.info({ host: addr.address, port: addr.port, from: head }, 'event socket listening');
    return { host: addr.address, port: addr.port };
  }

  /** The bound port once started (null before). */
  get port(): number | null {
    const addr = this.server.address();
    return addr && typeof addr === 'object' ? addr.port : null;
  }

  stats(): EventSocketStats {
    let authenticated = 0;
    for (const set of this.bySvc.values()) authenticated += set.size;
    for (const c of this.clients) if (c.stream && c.state === 'authenticated') authenticated++;
    return { connected: this.clients.size, authenticated, refused: this.counters.refusedPerAddress + this.counters.refusedPending, ...this.counters };
  }

  /** Stops accepting, ends the subscription and closes every client (destroyed after `graceMs`). */
  async stop(graceMs = 500): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.subscription?.close();
    for (const c of this.clients) c.stream?.close();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const c of this.clients) {
      this.clearTimers(c);
      c.state = 'closing';
      c.socket.end();
    }
    const grace = setTimeout(() => {
      for (const c of this.clients) c.socket.destroy();
    }, graceMs);
    grace.unref();
    await closed;
    clearTimeout(grace);
    await this.pumping;
    await Promise.allSettled([...this.streams]);
  }

  // ---- fan-out -------------------------------------------------------------------------------

  private async pump(sub: Subscription): Promise<void> {
    let written = 0;
    try {
      for await (const page of sub.batches()) {
        for (const e of page) {
          if (!isLegEvent(e)) continue;
          const targets = this.bySvc.get(e.data.svcId);
          if (!targets || targets.size === 0) continue;
          const line = JSON.stringify(toSocketEvent(e)) + '\n';
          for (const c of targets) this.send(c, line);
          this.counters.linesSent += targets.size;
          written += line.length;
          if (written >= this.opts.yieldEveryBytes) {
            // Let the sockets flush and readers read before the next part of a burst.
            written = 0;
            this.flush();
            await new Promise<void>((resolve) => setImmediate(resolve));
          }
        }
      }
    } catch (err) {
      if (!this.stopping) this.deps.logger.error({ err }, 'event socket subscription failed');
    }
  }

  /** Writes a line; writes of one turn of the event loop are corked into one syscall per client. */
  private send(c: Client, line: string): void {
    const s = c.socket;
    if (s.destroyed || c.state === 'closing') return;
    if (!c.corked) {
      c.corked = true;
      s.cork();
      this.corked.push(c);
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    }
    s.write(line);
    if (s.writableLength > this.opts.maxUnsentBytes) {
      this.counters.slowDisconnects++;
      this.deps.logger.info({ svcId: c.svcId, unsent: s.writableLength }, 'event socket client too slow: disconnected');
      this.drop(c);
      s.resetAndDestroy();
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    const list = this.corked.splice(0);
    for (const c of list) {
      c.corked = false;
      if (!c.socket.destroyed) c.socket.uncork();
    }
  }

  // ---- connections ---------------------------------------------------------------------------

  private accept(socket: net.Socket): void {
    if (this.stopping) {
      socket.destroy();
      return;
    }
    const address = socket.remoteAddress ?? '';
    const fromAddress = this.perAddress.get(address) ?? 0;
    const overAddress = fromAddress >= this.opts.maxConnectionsPerAddress;
    if (overAddress || this.pendingCount >= this.opts.maxPendingConnections) {
      if (overAddress) this.counters.refusedPerAddress++;
      else this.counters.refusedPending++;
      socket.on('error', () => {});
      socket.destroy();
      return;
    }
    this.perAddress.set(address, fromAddress + 1);
    this.pendingCount++;
    socket.setNoDelay(true);
    socket.setEncoding('utf8');
    const c = new Client(socket, this.opts.maxLineChars);
    this.clients.add(c);
    c.authTimer = setTimeout(() => {
      if (c.state === 'awaiting-key' || c.state === 'checking-key') this.close(c);
    }, this.opts.authTimeoutMs);
    c.authTimer.unref();
    socket.on('data', (chunk: string) => this.receive(c, chunk));
    socket.on('error', () => {}); // resets by peers are normal; 'close' follows
    socket.on('close', () => {
      this.clearTimers(c);
      this.drop(c);
      this.clients.delete(c);
      this.settlePending(c);
      c.stream?.close();
      const left = (this.perAddress.get(address) ?? 1) - 1;
      if (left > 0) this.perAddress.set(address, left);
      else this.perAddress.delete(address);
    });
  }

  private receive(c: Client, chunk: string): void {
    if (c.state === 'closing') return;
    const { lines, overflow } = c.splitter.push(chunk);
    for (const line of lines) this.enqueue(c, line);
    if (overflow) {
      this.close(c);
      return;
    }
    if (c.idleTimer) {
      clearTimeout(c.idleTimer);
      c.idleTimer = null;
    }
    if (c.splitter.hasPending && c.state !== 'authenticated') {
      c.idleTimer = setTimeout(() => {
        c.idleTimer = null;
        if (c.state !== 'closing' && c.state !== 'authenticated' && c.splitter.hasPending) this.enqueue(c, c.splitter.takePending());
      }, this.opts.firstMessageIdleMs);
      c.idleTimer.unref();
    }
  }

  private enqueue(c: Client, message: string): void {
    c.chain = c.chain.then(() => this.handle(c, message)).catch((err) => {
      this.deps.logger.error({ err }, 'event socket message failed');
      this.close(c);
    });
  }

  private async handle(c: Client, message: string): Promise<void> {
    if (c.state === 'closing' || c.socket.destroyed) return;
    const m = message.trim();
    if (m === 'ping') {
      this.sendControl(c, 'pong\n');
      return;
    }
    if (c.state === 'authenticated' || m === '') return; // nothing else is a command once in
    c.state = 'checking-key';
    const ok = await checkKey(this.deps, m);
    if (c.state !== 'checking-key' || c.socket.destroyed) return;
    if (!ok) return this.refuse(c, 'Unauthorized\n');
    // A resumable client: where its stream starts, checked before `Success`.
    let from: number | null = null;
    if (ok.cursor !== undefined) {
      from = await cursorPosition(this.deps, ok.svcId, ok.cursor);
      if (c.state !== 'checking-key' || c.socket.destroyed) return;
      if (from === null) return this.refuse(c, 'Invalid cursor\n');
    }
    c.state = 'authenticated';
    c.svcId = ok.svcId;
    this.settlePending(c);
    if (c.authTimer) clearTimeout(c.authTimer);
    if (c.idleTimer) clearTimeout(c.idleTimer);
    c.authTimer = c.idleTimer = null;
    this.sendControl(c, 'Success\n');
    if (from !== null) {
      const run = resume(this.deps, c, from, { lineSent: () => void this.counters.linesSent++, stopping: () => this.stopping });
      this.streams.add(run);
      void run.finally(() => this.streams.delete(run));
      return;
    }
    let set = this.bySvc.get(ok.svcId);
    if (!set) this.bySvc.set(ok.svcId, (set = new Set()));
    set.add(c);
  }

  private refuse(c: Client, answer: string): void {
    c.state = 'closing';
    this.clearTimers(c);
    c.socket.end(answer);
    setTimeout(() => c.socket.destroy(), 1000).unref();
  }

  private settlePending(c: Client): void {
    if (!c.pending) return;
    c.pending = false;
    this.pendingCount--;
  }

  private sendControl(c: Client, text: string): void {
    this.send(c, text);
  }

  private drop(c: Client): void {
    if (c.state === 'authenticated') {
      const set = this.bySvc.get(c.svcId);
      set?.delete(c);
      if (set && set.size === 0) this.bySvc.delete(c.svcId);
    }
    c.state = 'closing';
  }

  private close(c: Client): void {
    this.clearTimers(c);
    this.drop(c);
    c.socket.destroy();
  }

  private clearTimers(c: Client): void {
    if (c.idleTimer) clearTimeout(c.idleTimer);
    if (c.authTimer) clearTimeout(c.authTimer);
    c.idleTimer = c.authTimer = null;
  }
}
