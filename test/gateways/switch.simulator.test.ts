/** The simulated switch against the Switch contract, and its own rules (CONTRACT section 5). */
import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedSwitch } from '../../src/gateways/switch/simulator.js';
import type { Switch, SwitchSignal } from '../../src/gateways/switch/port.js';
import { until } from '../support/until.js';
import { switchContract } from './switch.contract.js';

switchContract('simulator', {
  open: async () => new SimulatedSwitch({ answerMs: 20, ringTimeoutMs: 150, talkMs: 0 }),
  numbers: { answers: '9876543210', busy: '9876540001', neverAnswers: '9876540000' },
});

describe('simulated switch: its own rules', () => {
  const switches: Switch[] = [];
  afterEach(async () => {
    await Promise.all(switches.splice(0).map((s) => s.close()));
  });

  it('answers after SIM_ANSWER_MS, stamps signals with its clock, and the customer hangs up SIM_TALK_MS after the bridge', async () => {
    let clock = 5_000_000;
    const sw: Switch = new SimulatedSwitch({ answerMs: 60, ringTimeoutMs: 1000, talkMs: 80, now: () => clock++ });
    switches.push(sw);
    const signals: Array<SwitchSignal & { at: number }> = [];
    sw.onSignal((s) => signals.push({ ...s, at: performance.now() }));
    const t0 = performance.now();
    sw.dial({ callId: 'c', legId: 'cust', number: '9876543210', role: 'customer' });
    sw.dial({ callId: 'c', legId: 'agent', number: '9100001001', role: 'agent' });
    await until(() => signals.filter((s) => s.kind === 'answered').length === 2, 'both answered');
    const answered = signals.find((s) => s.legId === 'cust' && s.kind === 'answered')!;
    expect(answered.at - t0).toBeGreaterThanOrEqual(55);
    expect(answered.time).toBeGreaterThanOrEqual(5_000_000);
    const bridgedAt = performance.now();
    sw.bridge('c', 'cust', 'agent', { record: true });
    await until(() => signals.some((s) => s.legId === 'cust' && s.kind === 'ended'), 'customer hung up');
    const ended = signals.find((s) => s.legId === 'cust' && s.kind === 'ended')!;
    expect(ended).toMatchObject({ reason: 'hangup' });
    expect(ended.at - bridgedAt).toBeGreaterThanOrEqual(75);
    // Only the customer hangs up on their own; the agent stays until told.
    expect(sw.activeLegs()).toEqual(['agent']);
  });

  it('dialling a leg id it holds already is ignored', async () => {
    const sw = new SimulatedSwitch({ answerMs: 10, ringTimeoutMs: 1000, talkMs: 0 });
    switches.push(sw);
    const signals: SwitchSignal[] = [];
    sw.onSignal((s) => signals.push(s));
    sw.dial({ callId: 'c', legId: 'l', number: '9876543210', role: 'customer' });
    sw.dial({ callId: 'c', legId: 'l', number: '9876543210', role: 'customer' });
    await until(() => signals.some((s) => s.kind === 'answered'), 'answered');
    sw.hangup('l');
    await until(() => signals.some((s) => s.kind === 'ended'), 'ended');
    expect(signals.map((s) => s.kind)).toEqual(['ringing', 'answered', 'ended']);
  });
});
