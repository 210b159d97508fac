/** One contract for every Switch adapter (src/gateways/switch/port.ts): what the call flow relies on. */
import { afterEach, describe, expect, it } from 'vitest';
import type { Switch, SwitchSignal } from '../../src/gateways/switch/port.js';
import { until } from '../support/until.js';

export interface SwitchHarness {
  /** A switch tuned for tests: parties answer, and unanswered legs time out, within a second or so. */
  open(): Promise<Switch>;
  /** Numbers that behave as named on this switch. */
  numbers: { answers: string; busy: string; neverAnswers: string };
  /** An inbound caller's leg held by the switch (default: acceptInbound; a real switch first gets the caller's call). */
  inbound?(sw: Switch, callId: string, legId: string, from: string): Promise<void>;
}

let seq = 0;
const ids = () => {
  seq++;
  return { callId: `call-${process.pid}-${seq}`, legId: `leg-${process.pid}-${seq}` };
};

export function switchContract(adapter: string, harness: SwitchHarness) {
  describe(`Switch contract: ${adapter}`, () => {
    const opened: Switch[] = [];
    const inbound = harness.inbound ?? (async (sw: Switch, callId: string, legId: string, from: string) => sw.acceptInbound(callId, legId, from));
    afterEach(async () => {
      await Promise.allSettled(opened.splice(0).map((s) => s.close()));
    });

    /** A switch and every signal it sent, in order. */
    async function open() {
      const sw = await harness.open();
      opened.push(sw);
      const signals: SwitchSignal[] = [];
      sw.onSignal((s) => signals.push(s));
      const of = (legId: string) => signals.filter((s) => s.legId === legId);
      const kinds = (legId: string) => of(legId).map((s) => s.kind);
      return { sw, signals, of, kinds };
    }

    it('a dialled leg rings, then answers; every signal names its call and leg; no signal arrives during dial()', async () => {
      const { sw, signals, of, kinds } = await open();
      const { callId, legId } = ids();
      sw.dial({ callId, legId, number: harness.numbers.answers, role: 'customer' });
      expect(signals).toEqual([]);
      await until(() => kinds(legId).includes('answered'), 'answered');
      expect(kinds(legId)).toEqual(['ringing', 'answered']);
      expect(of(legId).every((s) => s.callId === callId && typeof s.time === 'number')).toBe(true);
      expect(of(legId)[1]!.time).toBeGreaterThanOrEqual(of(legId)[0]!.time);
      expect(sw.activeLegs()).toContain(legId);
    });

    it('hanging up an answered leg ends it (hangup), last; a second hangup and an unknown leg are ignored', async () => {
      const { sw, kinds, of } = await open();
      const { callId, legId } = ids();
      sw.dial({ callId, legId, number: harness.numbers.answers, role: 'agent' });
      await until(() => kinds(legId).includes('answered'), 'answered');
      sw.hangup(legId);
      await until(() => kinds(legId).includes('ended'), 'ended');
      expect(of(legId).at(-1)).toMatchObject({ kind: 'ended', reason: 'hangup', callId });
      expect(sw.activeLegs()).not.toContain(legId);
      sw.hangup(legId);
      sw.hangup('no-such-leg');
      // A later leg's whole life passes: nothing more came for the ended one.
      const later = ids();
      sw.dial({ ...later, number: harness.numbers.busy, role: 'customer' });
      await until(() => kinds(later.legId).includes('ended'), 'the later leg ended');
      expect(kinds(legId)).toEqual(['ringing', 'answered', 'ended']);
    });

    it('a busy number rings and ends unanswered at once', async () => {
      const { sw, of, kinds } = await open();
      const { callId, legId } = ids();
      sw.dial({ callId, legId, number: harness.numbers.busy, role: 'customer' });
      await until(() => kinds(legId).includes('ended'), 'ended');
      expect(kinds(legId)).toEqual(['ringing', 'ended']);
      expect(of(legId)[1]).toMatchObject({ reason: 'busy' });
      expect(sw.activeLegs()).not.toContain(legId);
    });

    it('a number that never answers ends no_answer after ringing; hanging up a ringing leg ends it without an answer', async () => {
      const { sw, of, kinds } = await open();
      const a = ids();
      sw.dial({ ...a, number: harness.numbers.neverAnswers, role: 'customer' });
      await until(() => kinds(a.legId).includes('ended'), 'timed out', 15_000);
      expect(kinds(a.legId)).toEqual(['ringing', 'ended']);
      expect(of(a.legId)[1]).toMatchObject({ reason: 'no_answer' });
      const b = ids();
      sw.dial({ ...b, number: harness.numbers.neverAnswers, role: 'customer' });
      await until(() => kinds(b.legId).includes('ringing'), 'ringing');
      sw.hangup(b.legId);
      await until(() => kinds(b.legId).includes('ended'), 'ended');
      expect(kinds(b.legId)).toEqual(['ringing', 'ended']);
      expect(of(b.legId)[1]).toMatchObject({ reason: 'hangup' });
    });

    it('an inbound leg is held without signals until it ends; the remote party hanging up ends it', async () => {
      const { sw, kinds } = await open();
      const { callId, legId } = ids();
      await inbound(sw, callId, legId, '9876543210');
      expect(sw.activeLegs()).toContain(legId);
      expect(kinds(legId)).toEqual([]);
      sw.remoteHangup(legId);
      await until(() => kinds(legId).includes('ended'), 'ended');
      expect(kinds(legId)).toEqual(['ended']);
      expect(sw.activeLegs()).not.toContain(legId);
    });

    it('bridging and monitoring answered legs keeps them up', async () => {
      const { sw, kinds } = await open();
      const call = ids();
      const agent = ids();
      const monitor = ids();
      await inbound(sw, call.callId, call.legId, '9876543210');
      sw.dial({ callId: call.callId, legId: agent.legId, number: harness.numbers.answers, role: 'agent' });
      sw.dial({ callId: call.callId, legId: monitor.legId, number: harness.numbers.answers, role: 'monitor' });
      await until(() => kinds(agent.legId).includes('answered') && kinds(monitor.legId).includes('answered'), 'answered');
      sw.bridge(call.callId, call.legId, agent.legId, { record: true });
      sw.monitor(call.callId, monitor.legId, 'whisper');
      expect(sw.activeLegs()).toEqual(expect.arrayContaining([call.legId, agent.legId, monitor.legId]));
      sw.hangup(call.legId);
      await until(() => kinds(call.legId).includes('ended'), 'customer ended');
      expect(kinds(agent.legId)).toEqual(['ringing', 'answered']);
    });

    it('after close: no leg held and no signal sent', async () => {
      const { sw, signals } = await open();
      const { callId, legId } = ids();
      sw.dial({ callId, legId, number: harness.numbers.answers, role: 'customer' });
      await sw.close();
      const seen = signals.length;
      expect(sw.activeLegs()).toEqual([]);
      sw.dial({ ...ids(), number: harness.numbers.answers, role: 'customer' });
      // Whatever an open switch would have sent by now (a whole answered leg), a closed one did not.
      const probe = await open();
      const p = ids();
      probe.sw.dial({ ...p, number: harness.numbers.answers, role: 'customer' });
      await until(() => probe.kinds(p.legId).includes('answered'), 'a fresh switch answered');
      expect(signals.length).toBe(seen);
    });
  });
}
