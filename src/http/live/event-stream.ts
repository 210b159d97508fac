/**
 * One server-sent event stream (CONTRACT section 13): the events of one service stored after a
 * position, then the live ones, as `event: call` (the socket's event JSON) and `event: agent` (the
 * agent record), each with `id:` = a cursor naming its position. Resuming after a cursor replays
 * the log from that position, so nothing is lost and nothing repeated.
 *
 * Each stream reads the log through its own catch-up subscription, pulled only as fast as the
 * client takes the text (a slow client holds back only itself), and sends a comment line every
 * `heartbeatMs` so proxies keep the connection open.
 */
import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { EventStore, RecordedEvent, Subscription } from '../../gateways/event-store/port.js';
import type { ReadStore } from '../../gateways/read-store/port.js';
import { isLegEvent, toSocketEvent, type LegEvent } from '../../domain/call-events.js';
import { numberField } from '../../commands/platform-events.js';
import type { CursorCodec } from '../../domain/cursor.js';
import { agentRecord } from '../../queries/agents.js';
import { AgentRecordFolder } from './agent-records.js';

export interface StreamScope {
  svcId: number;
  /** null: every event of the service (admin); else that agent's events and its calls' events. */
  agentId: number | null;
}

export interface StreamDeps {
  events: EventStore;
  reads: ReadStore;
  cursors: CursorCodec;
}

const isAgentStream = (e: RecordedEvent) => e.streamId.startsWith('agent-');

/**
 * Whether an agent is on a call at a given event: it is once a leg event of the call names it (it
 * rang, answered or hung up there; customer legs name the agent on the call), and stays so.
 * A call first met mid-way (a resumed stream) is looked up in its stream once.
 */
export class AgentCalls {
  private readonly known = new Map<string, boolean>();

  constructor(
    private readonly events: EventStore,
    private readonly agentId: number,
  ) {}

  async isOn(e: RecordedEvent & LegEvent): Promise<boolean> {
    const d = e.data;
    if (d.agentId === this.agentId) return this.remember(d.xnid, true);
    const known = this.known.get(d.xnid);
    if (known !== undefined) return known;
    const earlier = e.revision > 0 ? await this.events.readStream(e.streamId, { maxCount: e.revision }) : [];
    return this.remember(d.xnid, earlier.some((x) => isLegEvent(x) && x.data.agentId === this.agentId));
  }

  private remember(xnid: string, on: boolean): boolean {
    if (this.known.size >= 10_000 && !this.known.has(xnid)) this.known.clear();
    if (on || !this.known.has(xnid)) this.known.set(xnid, on);
    return on;
  }
}

/** The SSE message for an event, or null when the event is not for this scope. */
export async function messageFor(e: RecordedEvent, scope: StreamScope, agents: AgentRecordFolder, calls: AgentCalls | null, cursors: CursorCodec): Promise<string | null> {
  if (isLegEvent(e)) {
    const d = e.data;
    if (d.svcId !== scope.svcId || (calls && !(await calls.isOn(e)))) return null;
    return `event: call\nid: ${cursors.encode(scope.svcId, e.position)}\ndata: ${JSON.stringify(toSocketEvent(e))}\n\n`;
  }
  if (e.type === 'QueueAlert' || e.type === 'QueueAlertCleared') {
    // Queue alerts (CONTRACT section 17) are for supervisors: admin streams only.
    const d = e.data as { svcId: number; queueId: number; reason: string; value: number; threshold: number; time: number };
    if (d.svcId !== scope.svcId || scope.agentId !== null) return null;
    const body = { type: e.type, svcId: d.svcId, queueId: d.queueId, reason: d.reason, value: d.value, threshold: d.threshold, time: d.time };
    return `event: ${e.type}\nid: ${cursors.encode(scope.svcId, e.position)}\ndata: ${JSON.stringify(body)}\n\n`;
  }
  if (isAgentStream(e)) {
    if (numberField(e, 'svcId') !== scope.svcId || (scope.agentId !== null && numberField(e, 'agentId') !== scope.agentId)) return null;
    const doc = await agents.after(e);
    if (!doc?.exists) return null;
    return `event: agent\nid: ${cursors.encode(scope.svcId, e.position)}\ndata: ${JSON.stringify(agentRecord(doc))}\n\n`;
  }
  return null;
}

export class LiveEventStream {
  private subscription: Subscription | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  private closed = false;
  readonly done: Promise<void>;
  private resolveDone!: () => void;

  constructor(
    private readonly deps: StreamDeps,
    private readonly res: ServerResponse,
    private readonly scope: StreamScope,
    private readonly heartbeatMs: number,
  ) {
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
  }

  /** Streams the events after `after` until the client leaves or {@link close} is called. */
  async run(after: number): Promise<void> {
    this.res.on('close', () => this.close());
    this.heartbeat = setInterval(() => {
      if (!this.closed) this.res.write(': keep-alive\n\n');
    }, this.heartbeatMs);
    this.heartbeat.unref();
    const agents = new AgentRecordFolder(this.deps.events, this.deps.reads);
    const calls = this.scope.agentId === null ? null : new AgentCalls(this.deps.events, this.scope.agentId);
    this.subscription = this.deps.events.subscribeToAll({ after });
    try {
      pages: for await (const page of this.subscription.batches()) {
        for (const e of page) {
          if (this.closed) break pages;
          const msg = await messageFor(e, this.scope, agents, calls, this.deps.cursors);
          if (msg === null || this.closed) continue;
          if (!this.res.write(msg)) {
            // Backpressure: read the log no faster than this client takes it.
            await Promise.race([once(this.res, 'drain').catch(() => {}), this.done]);
          }
        }
      }
    } finally {
      this.close();
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.subscription?.close();
    if (!this.res.writableEnded) this.res.end();
    this.resolveDone();
  }
}
