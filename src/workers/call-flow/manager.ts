/**
 * The call-flow process manager: turns call requests (events) and switch signals into call and agent
 * commands. It dials legs, picks agents (the named one, else by the routing policy, reserved through
 * the agent aggregate with an expected revision so no agent gets two calls, else the caller's queue),
 * bridges, transfers, and ends calls.
 *
 * It owns the switch, so it runs once (role `worker`). This file is its reaction table (which event
 * or signal leads to which step) and the steps; the commands of one reaction go in one append
 * (commands.ts: runSteps). Beside it: the per-call serial runner (serial.ts: a call's steps run one
 * at a time; the aggregate decides every step, so a step replayed or raced changes nothing twice),
 * the agent picker (agent-picker.ts, router.ts over src/domain/routing.ts) and crash recovery (recovery.ts).
 */
import type { Context } from '../../context.js';
import type { RecordedEvent, Subscription } from '../../gateways/event-store/port.js';
import type { Switch, SwitchSignal } from '../../gateways/switch/port.js';
import { activeLegs, type CallCommand, type CallStartedData, type CallState, type MonitorMode } from '../../commands/call/call.js';
import type { AgentState } from '../../commands/agent/agent.js';
import type { RecordingSigner } from '../../domain/recording.js';
import { isEvent } from '../../commands/platform-events.js';
import { SerialRunner, consumeEvents } from './serial.js';
import { agentOrder, placeCallback, queueCommand, routeOf, servedTurns } from './router.js';
import { QueueCallbacks } from './callbacks.js';
import { recoverCalls } from './recovery.js';
import { inboundCaller } from './inbound.js';
import { ActorCommands, WEBHOOK_RECORDING_TTL_MS, type Step } from './commands.js';
import { afterAgentLeft, allLegs, bridgeCommand, endSteps, ringStep, newActor, nextLegId, nothingLeft, partyLegs, type Actor, type AgentLeg, liveLegs } from './actor.js';

export class CallFlow {
  private readonly actors = new Map<string, Actor>();
  private subscription: Subscription | null = null;
  private loop: Promise<void> | null = null;
  private ticker: NodeJS.Timeout | null = null;
  private readonly dispatchPending = new Set<number>();
  private stopped = false;
  private readonly steps: SerialRunner;
  private readonly commands: ActorCommands;
  private readonly callbacks: QueueCallbacks;

  constructor(
    private readonly ctx: Context,
    private readonly sw: Switch,
    private readonly signer: RecordingSigner,
  ) {
    this.commands = new ActorCommands(ctx);
    this.callbacks = new QueueCallbacks(ctx);
    this.steps = new SerialRunner((err, xnid) => this.ctx.logger.error({ err, xnid }, 'call flow step failed'));
  }

  /** Calls this process is running (for tests and shutdown). */
  get openCalls(): number {
    return this.actors.size;
  }

  async start(): Promise<void> {
    this.sw.onSignal((s) => this.run(s.callId, () => this.onSignal(s)));
    this.sw.onInbound?.((offer) => inboundCaller(this.ctx, offer));
    const head = await this.ctx.events.headPosition();
    await this.ctx.sync.waitFor(head);
    await this.sw.recover?.();
    await recoverCalls(this.ctx, this.signer);
    await this.callbacks.load();
    this.subscription = this.ctx.events.subscribeToAll({ after: head });
    this.loop = consumeEvents(this.subscription, (e) => this.onEvent(e), () => this.stopped, (err) => this.ctx.logger.error({ err }, 'call flow stopped: event subscription failed'));
    // Wrap-up and overflow (overflowS) go by the clock, not by events: waiting callers looked at every second.
    this.ticker = setInterval(() => {
      for (const a of this.actors.values()) if (a.state.queuedAt !== null) this.scheduleDispatch(a.started.svcId);
      for (const svcId of this.callbacks.services()) this.scheduleDispatch(svcId);
    }, 1000);
    this.ticker.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.ticker) clearInterval(this.ticker);
    this.subscription?.close();
    await this.loop;
    await this.steps.settled();
    await this.sw.close();
  }

  /** Waits until every step queued so far has run (tests). */
  async idle(): Promise<void> {
    await this.steps.idle();
  }

  private onEvent(e: RecordedEvent) {
    if (!isEvent(e, 'CallStarted', 'CallHangupRequested', 'CallbackRequested', 'SimulatedHangupRequested', 'CallTransferRequested', 'CallLegAddRequested', 'CallMonitorRequested', 'AgentLoggedIn', 'AgentBreakEnded', 'AgentReleased')) return;
    switch (e.type) {
      case 'CallStarted':
        if (e.data.source?.callbackOf) this.callbacks.remove(e.data.xnid);
        return this.run(e.data.xnid, () => this.onStarted(e.data));
      case 'CallbackRequested':
        // The caller's place is kept; the call itself ends as on a hangup.
        this.callbacks.add(e.data);
        this.scheduleDispatch(e.data.svcId);
        return this.run(e.data.xnid, () => this.onHangupRequested(e.data.xnid));
      case 'CallHangupRequested':
        return this.run(e.data.xnid, () => this.onHangupRequested(e.data.xnid));
      case 'SimulatedHangupRequested':
        return this.run(e.data.xnid, () => this.onSimulatedHangup(e.data.xnid, e.data.party));
      case 'CallTransferRequested': {
        const t = e.data;
        return this.run(t.xnid, () => this.onTransfer(t.xnid, t.fromAgentId, t.toAgentId, t.mode));
      }
      case 'CallLegAddRequested':
        return this.run(e.data.xnid, () => this.onAddLeg(e.data.xnid, e.data.toAgentId));
      case 'CallMonitorRequested': {
        const m = e.data;
        return this.run(m.xnid, () => this.onMonitor(m.xnid, m.number, m.mode));
      }
      case 'AgentLoggedIn':
      case 'AgentBreakEnded': {
        const agentId = e.data.agentId;
        for (const a of this.actors.values()) a.tried.delete(agentId);
        return this.scheduleDispatch(e.data.svcId);
      }
      case 'AgentReleased':
        return this.scheduleDispatch(e.data.svcId);
    }
  }

  /** Runs a step of one call after its previous steps. */
  private run(xnid: string, step: () => Promise<void>) {
    this.steps.run(xnid, async () => {
      try {
        await step();
      } finally {
        // Steps carried (a ring) go with the next step's append, or now when none is queued.
        const a = this.actors.get(xnid);
        if (a?.carry.length && this.steps.waiting(xnid) === 0) await this.commands.together(a, []);
      }
    });
  }

  // --- requests -----------------------------------------------------------------------------

  private async onStarted(started: CallStartedData) {
    if (this.actors.has(started.xnid)) return;
    const a = newActor(started);
    this.actors.set(a.xnid, a);
    const now = this.ctx.now();
    if (started.direction === 'Inbound') {
      a.route = await routeOf(this.ctx, started);
      a.customerLeg = nextLegId(a);
      this.sw.acceptInbound(a.xnid, a.customerLeg, started.customerNumber);
      await this.commands.call(a, { type: 'Ring', legId: a.customerLeg, role: 'customer', agentId: null, number: started.customerNumber, time: now });
      if (started.blocked) {
        await this.commands.call(a, { type: 'Reject', time: now });
        this.sw.hangup(a.customerLeg);
        return;
      }
      // The IVR answers at once; the caller then waits for an agent.
      await this.commands.call(a, { type: 'Answer', legId: a.customerLeg, time: now });
      await this.offerNext(a);
      return;
    }
    if (started.agentFirst) {
      const agent = await this.pickAgent(a);
      if (agent) return this.dialAgent(a, agent, 'primary');
      if (started.namedAgentId !== null) return this.finish(a);
    } else if (started.namedAgentId !== null) {
      // The named agent is held for this call while the customer is rung.
      if (!(await this.commands.reserve(a, started.namedAgentId))) return this.finish(a);
    }
    a.customerLeg = nextLegId(a);
    this.sw.dial({ callId: a.xnid, legId: a.customerLeg, number: started.customerNumber, role: 'customer', from: started.did });
  }

  private async onHangupRequested(xnid: string) {
    const a = this.actors.get(xnid);
    if (!a) return;
    a.ending = true;
    if (!this.hangupAll(a)) await this.maybeEnd(a);
  }

  private async onSimulatedHangup(xnid: string, party: 'customer' | 'agent') {
    const a = this.actors.get(xnid);
    if (!a) return;
    if (party === 'customer') {
      if (a.customerLeg) this.sw.remoteHangup(a.customerLeg);
      return;
    }
    for (const [legId, leg] of activeLegs(a.state, 'agent')) if (leg.phase === 'up') this.sw.remoteHangup(legId);
  }

  private async onTransfer(xnid: string, fromAgentId: number, toAgentId: number, mode: 'BLIND' | 'ATTENDED') {
    const a = this.actors.get(xnid);
    if (!a || a.ending) return;
    const target = await this.commands.reserve(a, toAgentId);
    if (!target) return;
    const fromLeg = activeLegs(a.state, 'agent').find(([, l]) => l.agentId === fromAgentId)?.[0] ?? null;
    this.dialAgent(a, target, 'transfer', { fromLeg, mode });
    if (mode === 'BLIND' && fromLeg) this.sw.hangup(fromLeg);
  }

  private async onAddLeg(xnid: string, toAgentId: number) {
    const a = this.actors.get(xnid);
    if (!a || a.ending || this.sw.mixesMedia === false) return; // no media mixing (CONTRACT 16): the API said 409, and endSteps records nothing
    const target = await this.commands.reserve(a, toAgentId);
    if (target) this.dialAgent(a, target, 'add');
  }

  private async onMonitor(xnid: string, number: string, mode: MonitorMode) {
    const a = this.actors.get(xnid);
    if (!a || a.ending || this.sw.mixesMedia === false) return;
    const legId = nextLegId(a);
    a.monitorLegs.set(legId, mode);
    this.sw.dial({ callId: xnid, legId, number, role: 'monitor' });
  }

  // --- switch signals -----------------------------------------------------------------------

  private async onSignal(s: SwitchSignal) {
    const a = this.actors.get(s.callId);
    if (!a) {
      // A leg of a call that is over (or unknown): nothing may keep ringing.
      if (s.kind !== 'ended') this.sw.hangup(s.legId);
      return;
    }
    const agentLeg = a.agentLegs.get(s.legId);
    const isCustomer = s.legId === a.customerLeg;
    const monitor = a.monitorLegs.get(s.legId);
    switch (s.kind) {
      case 'ringing': {
        const ring = ringStep(a, s.legId, s.time);
        // Nothing waits on a ring: with the next signal queued already (the answer), it joins that step's append.
        if (ring && this.steps.waiting(a.xnid) > 0) a.carry.push(ring);
        else if (ring) await this.commands.together(a, [ring]);
        return;
      }
      case 'answered':
        if (a.ending) return this.sw.hangup(s.legId);
        if (isCustomer) return this.onCustomerAnswered(a, s.time);
        if (agentLeg) return this.onAgentAnswered(a, s.legId, agentLeg, s.time);
        if (monitor) {
          await this.commands.call(a, { type: 'Answer', legId: s.legId, time: s.time, mode: monitor });
          this.sw.monitor(a.xnid, s.legId, monitor);
        }
        return;
      case 'ended':
        if (agentLeg) return this.onAgentEnded(a, s.legId, agentLeg, s.time);
        if (isCustomer) return this.onCustomerEnded(a, { kind: 'call', xnid: a.xnid, command: { type: 'Down', legId: s.legId, time: s.time } });
        await this.commands.call(a, { type: 'Down', legId: s.legId, time: s.time });
        a.monitorLegs.delete(s.legId);
        return this.maybeEnd(a);
    }
  }

  private async onCustomerAnswered(a: Actor, time: number) {
    const answer: Step = { kind: 'call', xnid: a.xnid, command: { type: 'Answer', legId: a.customerLeg!, time } };
    const upAgent = [...a.agentLegs.entries()].find(([id]) => a.state.legs[id]?.phase === 'up');
    const named = a.started.namedAgentId;
    // The usual case: the answer goes in one append with the first free agent's reservation.
    if (!upAgent && !(named !== null && a.reserved.has(named))) return this.offerNext(a, answer);
    await this.commands.together(a, [answer]);
    if (upAgent) return this.bridge(a, upAgent[0], upAgent[1]);
    return this.dialAgent(a, a.reserved.get(named!)!, 'primary');
  }

  private async onAgentAnswered(a: Actor, legId: string, leg: AgentLeg, time: number) {
    // The agent's answer, the call's and (the customer being up) the bridge: one append.
    const customerLeg = a.customerLeg;
    const steps: Step[] = [
      { kind: 'agent', svcId: a.started.svcId, agentId: leg.agentId, command: { type: 'Answer', xnid: a.xnid, time } },
      { kind: 'call', xnid: a.xnid, command: { type: 'Answer', legId, time } },
    ];
    const bridging = customerLeg !== null && a.state.legs[customerLeg]?.phase === 'up';
    if (bridging) steps.push({ kind: 'call', xnid: a.xnid, command: bridgeCommand(a, legId, leg, this.ctx.now()), if: (s) => s.legs[customerLeg]?.phase === 'up' });
    await this.commands.together(a, steps);
    leg.talked = true;
    if (!a.customerLeg) {
      // Agent first: now ring the customer.
      a.customerLeg = nextLegId(a);
      this.sw.dial({ callId: a.xnid, legId: a.customerLeg, number: a.started.customerNumber, role: 'customer', from: a.started.did });
      return;
    }
    if (a.state.legs[a.customerLeg]?.phase !== 'up') return;
    if (leg.transfer?.mode === 'ATTENDED' && leg.transfer.fromLeg) this.sw.hangup(leg.transfer.fromLeg);
    if (bridging) this.sw.bridge(a.xnid, a.customerLeg, legId, { record: a.started.recording });
    else await this.bridge(a, legId, leg);
  }

  private async onCustomerEnded(a: Actor, down: Step) {
    a.ending = true;
    const hanging = this.hangupAll(a);
    // The ends of the legs hung up follow: when one is queued after a turn (the simulator's is), the
    // customer's end is carried into its append; else appended now.
    if (hanging) await new Promise((r) => setImmediate(r));
    if (hanging && this.steps.waiting(a.xnid) > 0) return void a.carry.push(down);
    await this.commands.together(a, [down]);
    if (!hanging) await this.maybeEnd(a);
  }

  private async onAgentEnded(a: Actor, legId: string, leg: AgentLeg, time: number) {
    a.agentLegs.delete(legId);
    if (a.offering === legId) a.offering = null;
    a.reserved.delete(leg.agentId);
    // The leg's end, the agent's release and, when nothing is left of a call that is ending, its end: one append.
    const ends = a.ending && nothingLeft(a, liveLegs(this.sw));
    await this.commands.together(a, [
      { kind: 'call', xnid: a.xnid, command: { type: 'Down', legId, time } },
      { kind: 'agent', svcId: a.started.svcId, agentId: leg.agentId, command: { type: 'Release', xnid: a.xnid, time: this.ctx.now(), wrapUp: a.started.wrapUp } },
      ...(ends ? this.endSteps(a) : []),
    ]);
    if (ends) return void this.actors.delete(a.xnid);
    if (a.ending) return this.maybeEnd(a);
    const next = afterAgentLeft(a, leg);
    if (next.ending) a.ending = true;
    if (next.hangup) this.sw.hangup(next.hangup);
    if (next.maybeEnd) return this.maybeEnd(a);
    if (next.offer) await this.offerNext(a);
  }

  // --- steps ----------------------------------------------------------------------------------

  /** The named agent, else free agents longest-free first, reserved one by one until one holds. */
  /** `answer` (the customer's) goes in the first append, and agents are tried only if it holds. */
  private async pickAgent(a: Actor, answer?: Step): Promise<AgentState | null> {
    const up = (s?: CallState) => s?.legs[a.customerLeg!]?.phase === 'up';
    let carry = answer ? [answer] : [];
    for (const agentId of await agentOrder(this.ctx, a, this.actors.values(), this.callbacks)) {
      if (a.started.namedAgentId === null && !this.commands.mayTry(a.started.svcId, agentId)) continue;
      const s = await this.commands.reserve(a, agentId, carry, (before) => !answer || up(before.at(-1)?.state as CallState));
      carry = [];
      if (answer && !up(a.state)) return null;
      if (s) return s;
    }
    if (carry.length > 0) await this.commands.together(a, carry);
    return null;
  }

  /** Offers the waiting customer to an agent, or queues the call; `answer` makes the customer up first. */
  private async offerNext(a: Actor, answer?: Step) {
    const waiting = !!a.customerLeg && (!!answer || a.state.legs[a.customerLeg]?.phase === 'up');
    if (a.ending || a.offering || !waiting || activeLegs(a.state, 'agent').length > 0 || a.agentLegs.size > 0) return void (answer && (await this.commands.together(a, [answer])));
    const agent = await this.pickAgent(a, answer);
    if (a.state.legs[a.customerLeg!]?.phase !== 'up') return;
    if (agent) {
      this.dialAgent(a, agent, 'primary');
      return;
    }
    if (a.state.queuedAt === null) await this.commands.call(a, await queueCommand(this.ctx, a));
  }

  private dialAgent(a: Actor, agent: AgentState, purpose: AgentLeg['purpose'], transfer?: AgentLeg['transfer']) {
    const legId = nextLegId(a);
    a.agentLegs.set(legId, { agentId: agent.agentId, number: agent.number, name: agent.name, purpose, transfer, talked: false });
    if (purpose === 'primary') a.offering = legId;
    this.sw.dial({ callId: a.xnid, legId, number: agent.number, role: 'agent', from: a.started.did });
  }

  private async bridge(a: Actor, legId: string, leg: AgentLeg) {
    await this.commands.call(a, bridgeCommand(a, legId, leg, this.ctx.now()));
    this.sw.bridge(a.xnid, a.customerLeg!, legId, { record: a.started.recording });
  }

  /** Hangs up every leg still up or ringing; false when there was none. */
  private hangupAll(a: Actor): boolean {
    const live = liveLegs(this.sw), legs = [...allLegs(a)].filter((id) => live.has(id));
    for (const id of legs) this.sw.hangup(id);
    return legs.length > 0;
  }

  /** Ends the call once no customer or agent leg is left; monitors are hung up first. */
  private async maybeEnd(a: Actor) {
    const live = liveLegs(this.sw);
    if (partyLegs(a, live).length > 0) return;
    const monitors = [...a.monitorLegs.keys()].filter((id) => live.has(id));
    // Monitors are hung up first: their ends come back here.
    if (monitors.length > 0) return monitors.forEach((id) => this.sw.hangup(id));
    await this.finish(a);
  }

  private endSteps(a: Actor): Step[] {
    const now = this.ctx.now();
    return endSteps(a, now, this.sw.mixesMedia === false ? null : this.signer.url(a.xnid, now + WEBHOOK_RECORDING_TTL_MS));
  }

  private async finish(a: Actor) {
    await this.commands.together(a, this.endSteps(a));
    this.actors.delete(a.xnid);
  }

  private scheduleDispatch(svcId: number) {
    if (this.dispatchPending.has(svcId) || this.stopped) return;
    this.dispatchPending.add(svcId);
    setImmediate(() =>
      this.steps.run(`dispatch-${svcId}`, async () => {
        this.dispatchPending.delete(svcId);
        // In caller order (routing.ts): each caller leaves the agents of those before it alone.
        for (const t of await servedTurns(this.ctx, this.actors.values(), this.callbacks, svcId)) {
          if (t.a) this.run(t.a.xnid, () => this.offerNext(t.a));
          else this.run(`callback-${t.entry.callbackId}`, () => placeCallback(this.ctx, t.entry, t.caller, this.actors.values(), this.callbacks, this.commands));
        }
      }),
    );
  }
}
