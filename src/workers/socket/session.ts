/**
 * One event-socket connection, and what it is let in to: the key of its first message (which
 * service), the cursor it resumes from, and a resumable client's own paced stream (CONTRACT
 * sections 7 and 14). Framing and key syntax are in protocol.ts; the server (server.ts) accepts
 * connections, caps them and fans the live events out.
 */
import type net from 'node:net';
import type { Logger } from 'pino';
import type { EventStore, Subscription } from '../../gateways/event-store/port.js';
import type { ReadStore } from '../../gateways/read-store/port.js';
import type { ReadSync } from '../../projections/read-sync.js';
import type { ServiceDoc } from '../../projections/services.js';
import { isLegEvent, toSocketEvent, type SocketCallEvent } from '../../domain/call-events.js';
import type { CursorCodec } from '../../domain/cursor.js';
import { LineSplitter, keyMatches, parseAuth } from './protocol.js';

export interface EventSocketDeps {
  events: EventStore;
  reads: ReadStore;
  sync: ReadSync;
  cursors: CursorCodec;
  logger: Pick<Logger, 'info' | 'warn' | 'error' | 'debug'>;
}

export type ClientState = 'awaiting-key' | 'checking-key' | 'authenticated' | 'closing';

/** A connection and where it is in the protocol. */
export class Client {
  state: ClientState = 'awaiting-key';
  svcId = 0;
  corked = false;
  readonly splitter: LineSplitter;
  idleTimer: NodeJS.Timeout | null = null;
  authTimer: NodeJS.Timeout | null = null;
  /** Messages are handled one after another (a key check is async). */
  chain: Promise<void> = Promise.resolve();
  /** Counted among the connections without an accepted key. */
  pending = true;
  /** A resumable client's own subscription (null for plain clients). */
  stream: Subscription | null = null;

  constructor(
    readonly socket: net.Socket,
    maxLine: number,
  ) {
    this.splitter = new LineSplitter(maxLine);
  }
}

/** The service a first message's key opens (and the cursor it resumes from), or null. */
export async function checkKey(deps: EventSocketDeps, message: string): Promise<{ svcId: number; cursor?: string } | null> {
  const auth = parseAuth(message);
  // A key provisioned before this connection arrived must be seen (CONTRACT section 2).
  await deps.sync.caughtUp(2000).catch(() => {});
  const svc = auth ? await deps.reads.get<ServiceDoc>('services', String(auth.svcId)) : null;
  const ok = keyMatches(auth?.key ?? message, svc?.socketKey);
  return ok && auth ? { svcId: auth.svcId, cursor: auth.cursor } : null;
}

/**
 * The log position a resumable client starts after: `now` the head, `0` the beginning, else the
 * position a cursor this server gave on this service names (signed: domain/cursor.ts), so a
 * forged one never reaches the event store; null for anything else.
 */
export async function cursorPosition(deps: EventSocketDeps, svcId: number, cursor: string): Promise<number | null> {
  if (cursor === 'now') return deps.events.headPosition();
  if (cursor === '0') return 0;
  const position = deps.cursors.decode(svcId, cursor);
  // A cursor from before a log was wiped (tests, a restored backup) names no event yet.
  if (position === null || position > (await deps.events.headPosition())) return null;
  return position;
}

/**
 * A resumable client's stream: its own subscription from `after`, each leg event of its service
 * with its cursor, written only once the socket has drained what was written before, so a
 * client catching up is paced by its own reading and never cut off for the backlog.
 */
export async function resume(deps: EventSocketDeps, c: Client, after: number, hooks: { lineSent(): void; stopping(): boolean }): Promise<void> {
  const sub = deps.events.subscribeToAll({ after });
  c.stream = sub;
  const s = c.socket;
  try {
    pages: for await (const page of sub.batches()) {
      for (const e of page) {
        if (c.state !== 'authenticated' || s.destroyed) break pages;
        if (!isLegEvent(e) || e.data.svcId !== c.svcId) continue;
        // The cursor set on the new object, not spread into a copy (~650 ns a line on Node 20).
        const event: SocketCallEvent & { cursor?: string } = toSocketEvent(e);
        event.cursor = deps.cursors.encode(c.svcId, e.position);
        const line = JSON.stringify(event) + '\n';
        hooks.lineSent();
        if (!s.write(line)) {
          await new Promise<void>((resolve) => {
            const done = () => {
              s.off('drain', done);
              s.off('close', done);
              resolve();
            };
            s.on('drain', done);
            s.on('close', done);
          });
        }
      }
    }
  } catch (err) {
    if (!hooks.stopping()) deps.logger.error({ err }, 'event socket: resumable stream failed');
    s.destroy();
  } finally {
    sub.close();
  }
}
