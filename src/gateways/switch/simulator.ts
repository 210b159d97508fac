/**
 * The simulated switch of CONTRACT section 5: every dialled leg rings, then answers after
 * SIM_ANSWER_MS, except by its last four digits: `0000` never answers (ends unanswered after
 * SIM_RING_TIMEOUT_MS) and `0001` is busy (ends at once after ringing). When SIM_TALK_MS is set, the
 * customer hangs up that long after being bridged.
 */
import { EventEmitter } from 'node:events';
import type { DialRequest, EndReason, MonitorMode, Switch, SwitchSignal } from './port.js';

export interface SimulatorOptions {
  answerMs: number;
  ringTimeoutMs: number;
  talkMs: number;
  now?: () => number;
}

interface SimLeg {
  callId: string;
  legId: string;
  number: string;
  role: DialRequest['role'];
  state: 'ringing' | 'up';
  timers: Pending[];
}

type Pending = { timeout: NodeJS.Timeout } | { immediate: NodeJS.Immediate };
const cancel = (p: Pending) => ('timeout' in p ? clearTimeout(p.timeout) : clearImmediate(p.immediate));

export class SimulatedSwitch implements Switch {
  readonly mixesMedia = true;
  private readonly legs = new Map<string, SimLeg>();
  private readonly emitter = new EventEmitter();
  private readonly now: () => number;
  private closed = false;

  constructor(private readonly options: SimulatorOptions) {
    this.now = options.now ?? Date.now;
    this.emitter.setMaxListeners(0);
  }

  onSignal(listener: (signal: SwitchSignal) => void): void {
    this.emitter.on('signal', listener);
  }

  activeLegs(): string[] {
    return [...this.legs.keys()];
  }

  hasLeg(legId: string): boolean {
    return this.legs.has(legId);
  }

  dial(request: DialRequest): void {
    if (this.closed || this.legs.has(request.legId)) return;
    const leg: SimLeg = { ...request, state: 'ringing', timers: [] };
    this.legs.set(leg.legId, leg);
    // Signals go out asynchronously, as from a real switch: the caller has finished its own step first.
    this.later(leg, 0, () => {
      this.emit({ kind: 'ringing', callId: leg.callId, legId: leg.legId, time: this.now() });
      const suffix = leg.number.slice(-4);
      if (suffix === '0001') return this.end(leg, 'busy');
      if (suffix === '0000') return this.later(leg, this.options.ringTimeoutMs, () => this.end(leg, 'no_answer'));
      const answer = () => {
        leg.state = 'up';
        this.emit({ kind: 'answered', callId: leg.callId, legId: leg.legId, time: this.now() });
      };
      // SIM_ANSWER_MS=0: answered right behind the ring, as a switch reports both from one packet.
      if (this.options.answerMs <= 0) {
        if (this.legs.get(leg.legId) === leg) answer();
      } else this.later(leg, this.options.answerMs, answer);
    });
  }

  acceptInbound(callId: string, legId: string, from: string): void {
    if (this.closed || this.legs.has(legId)) return;
    this.legs.set(legId, { callId, legId, number: from, role: 'customer', state: 'up', timers: [] });
  }

  hangup(legId: string): void {
    const leg = this.legs.get(legId);
    if (leg) this.later(leg, 0, () => this.end(leg, 'hangup'));
  }

  remoteHangup(legId: string): void {
    this.hangup(legId);
  }

  bridge(_callId: string, legA: string, legB: string): void {
    if (this.options.talkMs <= 0) return;
    for (const id of [legA, legB]) {
      const leg = this.legs.get(id);
      if (leg?.role === 'customer') this.later(leg, this.options.talkMs, () => this.end(leg, 'hangup'));
    }
  }

  monitor(_callId: string, _legId: string, _mode: MonitorMode): void {
    // Audio routing only: nothing to simulate beyond the leg itself.
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const leg of this.legs.values()) for (const t of leg.timers) cancel(t);
    this.legs.clear();
    this.emitter.removeAllListeners();
  }

  private later(leg: SimLeg, ms: number, fn: () => void) {
    const run = () => {
      leg.timers = leg.timers.filter((x) => x !== t);
      if (this.legs.get(leg.legId) === leg) fn();
    };
    // Zero delay on the next turn of the event loop: a timer would wait at least 1 ms, several times per call.
    const t: Pending = ms <= 0 ? { immediate: setImmediate(run) } : { timeout: setTimeout(run, ms) };
    leg.timers.push(t);
  }

  private end(leg: SimLeg, reason: EndReason) {
    if (this.legs.get(leg.legId) !== leg) return;
    this.legs.delete(leg.legId);
    for (const t of leg.timers) cancel(t);
    this.emit({ kind: 'ended', callId: leg.callId, legId: leg.legId, time: this.now(), reason });
  }

  private emit(signal: SwitchSignal) {
    this.emitter.emit('signal', signal);
  }
}
