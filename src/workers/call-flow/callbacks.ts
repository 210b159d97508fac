/**
 * Callbacks (CONTRACT section 17): a caller who asked to be called back keeps its place in the
 * queue as an entry with no live leg. When routing would offer it to an agent, that agent is
 * reserved and the callback call (agent first, `callback-of` the original call) is started, in one
 * append. The places are events (CallbackRequested; the callback's CallStarted takes one out), kept
 * by the `queue-callbacks` read model, so they survive a restart: the worker loads them at start.
 */
import type { Context } from '../../context.js';
import type { CallbackPlace } from '../../commands/call/call.js';
import type { QueueCallbackDoc } from '../../projections/calls.js';
import type { ServiceDoc } from '../../projections/services.js';
import { outboundCallStarted } from '../../commands/call/place.js';
import { routedCaller, type RoutedCaller } from '../../domain/routing.js';
import type { ActorCommands } from './commands.js';
import type { Step } from './steps.js';
import { runSteps } from './commands.js';

export interface CallbackEntry extends CallbackPlace {
  svcId: number;
  /** The call that asked for it. */
  xnid: string;
}

export class QueueCallbacks {
  private readonly entries = new Map<string, CallbackEntry>();

  constructor(private readonly ctx: Context) {}

  /** The places kept when this process starts (the read model has caught up with the log). */
  async load(): Promise<void> {
    for (const d of await this.ctx.reads.find<QueueCallbackDoc>('queue-callbacks', {})) this.add(d);
  }

  add(d: CallbackEntry): void {
    const { svcId, xnid, callbackId, queueId, number, priority, queuedAt, inbound, skillId } = d;
    this.entries.set(callbackId, { svcId, xnid, callbackId, queueId, number, priority, queuedAt, inbound, skillId });
  }

  remove(callbackId: string): void {
    this.entries.delete(callbackId);
  }

  /** Services with places waiting. */
  services(): Set<number> {
    return new Set([...this.entries.values()].map((e) => e.svcId));
  }

  /** The service's places, as routing ranks them (each as its caller was ranked). */
  async callers(svcId: number): Promise<{ entry: CallbackEntry; caller: RoutedCaller }[]> {
    const mine = [...this.entries.values()].filter((e) => e.svcId === svcId);
    if (mine.length === 0) return [];
    const service = await this.ctx.reads.get<ServiceDoc>('services', String(svcId));
    return mine.map((entry) => ({
      entry,
      caller: routedCaller(entry.callbackId, {
        inbound: entry.inbound,
        queue: service?.queues.find((q) => q.id === entry.queueId) ?? null,
        customerPriority: entry.priority,
        skillId: entry.skillId,
        queuedAt: entry.queuedAt,
      }),
    }));
  }

  /**
   * Places the callback with the first of `agents` that can be reserved: the reservation and the
   * callback call's start in one append. True once placed (or already gone).
   */
  async place(entry: CallbackEntry, agents: number[], commands: ActorCommands): Promise<boolean> {
    if (!this.entries.has(entry.callbackId)) return true;
    for (const agentId of agents) {
      if (!commands.mayTry(entry.svcId, agentId)) continue;
      const data = await outboundCallStarted(this.ctx, {
        svcId: entry.svcId,
        number: entry.number,
        origin: 'api',
        namedAgentId: agentId,
        agentFirst: true,
        recording: true,
        userId: null,
        xnid: entry.callbackId,
        source: { callbackOf: entry.xnid },
      });
      const steps: Step[] = [
        { kind: 'agent', svcId: entry.svcId, agentId, command: { type: 'Reserve', xnid: entry.callbackId, time: data.time } },
        { kind: 'call', xnid: entry.callbackId, command: { type: 'Start', data }, if: (_s, before) => before[0] !== null },
      ];
      const [reserved] = await runSteps(this.ctx, steps);
      if (reserved) {
        this.entries.delete(entry.callbackId);
        return true;
      }
    }
    return false;
  }
}
