/** A line-reading TCP client for event socket tests: waits on received lines with a deadline. */
import net from 'node:net';
import { randomUUID } from 'node:crypto';
import type { LegEventData, LegEventType } from '../../src/domain/call-events.js';
import type { EventStore } from '../../src/gateways/event-store/port.js';

export class LineClient {
  readonly lines: string[] = [];
  closed = false;
  private buf = '';
  private waiters: Array<() => void> = [];

  private constructor(readonly socket: net.Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      this.buf += chunk;
      let nl: number;
      while ((nl = this.buf.indexOf('\n')) !== -1) {
        this.lines.push(this.buf.slice(0, nl));
        this.buf = this.buf.slice(nl + 1);
      }
      this.notify();
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      this.closed = true;
      this.notify();
    });
  }

  static connect(port: number, host = '127.0.0.1'): Promise<LineClient> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ port, host }, () => resolve(new LineClient(s)));
      s.once('error', reject);
    });
  }

  /** Connects and authenticates; resolves once `Success` arrived. */
  static async authed(port: number, svcId: number, key: string, host = '127.0.0.1'): Promise<LineClient> {
    const c = await LineClient.connect(port, host);
    c.send(`${svcId}:${key}\n`);
    await c.waitForLines(1);
    if (c.lines[0] !== 'Success') throw new Error(`expected Success, got ${c.lines[0]}`);
    return c;
  }

  send(text: string): void {
    this.socket.write(text);
  }

  /** JSON events received so far (lines after Success that parse as objects). */
  events(): Array<Record<string, unknown>> {
    return this.lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  }

  private notify() {
    const w = this.waiters.splice(0);
    for (const f of w) f();
  }

  async until(pred: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!pred()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; lines so far: ${JSON.stringify(this.lines.slice(-5))} (closed=${this.closed})`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  waitForLines(n: number, timeoutMs = 5000): Promise<void> {
    return this.until(() => this.lines.length >= n, `${n} lines`, timeoutMs);
  }

  waitForEvents(n: number, timeoutMs = 5000): Promise<void> {
    return this.until(() => this.events().length >= n, `${n} events`, timeoutMs);
  }

  waitClosed(timeoutMs = 5000): Promise<void> {
    return this.until(() => this.closed, 'close', timeoutMs);
  }

  close(): void {
    this.socket.destroy();
  }
}

export function legData(svcId: number, overrides: Partial<LegEventData> = {}): LegEventData {
  return {
    xnid: randomUUID(),
    svcId,
    agentId: null,
    number: '9876543210',
    time: Date.now(),
    data: '',
    direction: 'Inbound',
    ...overrides,
  };
}

/** Appends leg events to a call stream, the way the call aggregate will. */
export async function appendLegs(events: EventStore, items: Array<{ type: LegEventType; data: LegEventData }>): Promise<number> {
  const res = await events.appendToStream(`call-${items[0]!.data.xnid}`, items, { expectedRevision: 'any' });
  return res.position;
}
