import { describe, expect, it } from 'vitest';
import { callDecider, type CallCommand, type CallEvent, type CallStartedData } from '../../src/commands/call/call.js';
import { fold } from '../../src/commands/decider.js';
import { AppError } from '../../src/domain/errors.js';

const xnid = '11111111-1111-4111-8111-111111111111';
const start: CallStartedData = {
  xnid,
  svcId: 101,
  direction: 'Outbound',
  origin: 'api',
  customerNumber: '9876543210',
  did: '8000000101',
  data: '',
  recording: true,
  timezone: 'Asia/Kolkata',
  day: '2026-11-23',
  agentFirst: false,
  namedAgentId: null,
  skillId: null,
  msgToAgent: '',
  countryCode: '',
  userId: 1,
  blocked: false,
  wrapUp: false,
  source: null,
  time: 1_000,
};

function run(given: CallEvent[], ...commands: CallCommand[]): CallEvent[] | string {
  let events = [...given];
  const out: CallEvent[] = [];
  try {
    for (const c of commands) {
      const next = callDecider.decide(c, fold(callDecider, events));
      events = [...events, ...next];
      out.push(...next);
    }
    return out;
  } catch (err) {
    if (err instanceof AppError) return err.code;
    throw err;
  }
}
const types = (r: CallEvent[] | string) => (typeof r === 'string' ? r : r.map((e) => e.type));
const started: CallEvent = { type: 'CallStarted', data: start };

describe('call decider', () => {
  it('starting twice appends once', () => {
    expect(types(run([], { type: 'Start', data: start }, { type: 'Start', data: start }))).toEqual(['CallStarted']);
  });

  it('a leg rings, answers and hangs up once; answering a leg that never rang is refused', () => {
    const r = run(
      [started],
      { type: 'Ring', legId: 'c', role: 'customer', agentId: null, number: '9876543210', time: 2_000 },
      { type: 'Ring', legId: 'c', role: 'customer', agentId: null, number: '9876543210', time: 2_001 },
      { type: 'Answer', legId: 'c', time: 3_000 },
      { type: 'Answer', legId: 'c', time: 3_001 },
      { type: 'Down', legId: 'c', time: 4_000 },
      { type: 'Down', legId: 'c', time: 4_001 },
    );
    expect(types(r)).toEqual(['CustomerRing', 'CustomerUp', 'CustomerHangup']);
    expect(run([started], { type: 'Answer', legId: 'x', time: 1 })).toBe('CONFLICT');
  });

  it('customer events carry the agent once one answered; agent events their own agent', () => {
    const r = run(
      [started],
      { type: 'Ring', legId: 'a', role: 'agent', agentId: 1001, number: '9100001001', time: 2_000 },
      { type: 'Answer', legId: 'a', time: 2_100 },
      { type: 'Ring', legId: 'c', role: 'customer', agentId: null, number: '9876543210', time: 2_200 },
    ) as CallEvent[];
    expect(r.map((e) => (e.data as { agentId: number | null }).agentId)).toEqual([1001, 1001, 1001]);
    expect(r[2]!.data).toMatchObject({ xnid, svcId: 101, number: '9876543210', time: 2_200, data: '', direction: 'Outbound' });
  });

  it('End computes disposition, times, duration and the webhook record; nothing happens after it', () => {
    const given = [
      started,
      ...(run(
        [started],
        { type: 'Ring', legId: 'c', role: 'customer', agentId: null, number: '9876543210', time: 10_000 },
        { type: 'Answer', legId: 'c', time: 11_000 },
        { type: 'Ring', legId: 'a', role: 'agent', agentId: 1001, number: '9100001001', time: 11_500 },
        { type: 'Answer', legId: 'a', time: 12_000 },
        { type: 'Bridge', agentId: 1001, agentName: 'Asha', agentNumber: '9100001001', time: 12_000 },
        { type: 'Down', legId: 'c', time: 75_900 },
        { type: 'Down', legId: 'a', time: 76_000 },
      ) as CallEvent[]),
    ];
    const end = run(given, { type: 'End', time: 76_100, recordingUrl: 'http://x/recordings/r.wav' }) as CallEvent[];
    expect(types(end)).toEqual(['CallEnded']);
    expect(end[0]!.data).toEqual({
      xnid,
      svcId: 101,
      direction: 'Outbound',
      disposition: 'answered',
      startTime: 10_000,
      endTime: 76_000,
      durationS: 66,
      agentId: 1001,
      agentNumber: '9100001001',
      customerNumber: '9876543210',
      recordingUrl: 'http://x/recordings/r.wav',
      webhook: {
        callid: xnid,
        'call-duration': '66',
        'agent-number': '9100001001',
        'customer-number': '9876543210',
        'end-time': '1970-01-01 05:31:16',
        'start-time': '1970-01-01 05:30:10',
        'recording-url': 'http://x/recordings/r.wav',
        'call-type': 'outgoing',
        'virtual-number': '8000000101',
        disposition: 'answered',
      },
    });
    const after = [...given, ...end];
    expect(run(after, { type: 'End', time: 80_000, recordingUrl: null })).toEqual([]);
    expect(run(after, { type: 'RequestHangup', userId: 1, time: 80_000 })).toBe('CONFLICT');
    expect(run(after, { type: 'Ring', legId: 'z', role: 'agent', agentId: 1002, number: '1', time: 80_000 })).toBe('CONFLICT');
  });

  it('End closes legs a lost switch left open, and a missed call has no recording and no agent', () => {
    const given = [started, ...(run([started], { type: 'Ring', legId: 'c', role: 'customer', agentId: null, number: '9876543210', time: 10_000 }) as CallEvent[])];
    const end = run(given, { type: 'End', time: 12_000, recordingUrl: 'http://x' }) as CallEvent[];
    expect(types(end)).toEqual(['CustomerHangup', 'CallEnded']);
    expect(end[1]!.data).toMatchObject({ disposition: 'missed', recordingUrl: null, agentNumber: '', durationS: 2 });
    expect((end[1]!.data as { webhook: object }).webhook).not.toHaveProperty('recording-url');
  });

  it('a transfer needs the named agent to be talking on the call', () => {
    const given = [
      started,
      ...(run(
        [started],
        { type: 'Ring', legId: 'c', role: 'customer', agentId: null, number: '9876543210', time: 1 },
        { type: 'Answer', legId: 'c', time: 2 },
        { type: 'Ring', legId: 'a', role: 'agent', agentId: 1001, number: '9100001001', time: 3 },
      ) as CallEvent[]),
    ];
    expect(run(given, { type: 'RequestTransfer', fromAgentId: 1001, toAgentId: 1002, mode: 'BLIND', time: 4 })).toBe('CONFLICT');
    expect(types(run(given, { type: 'Answer', legId: 'a', time: 4 }, { type: 'RequestTransfer', fromAgentId: 1001, toAgentId: 1002, mode: 'BLIND', time: 5 }))).toEqual(['AgentUp', 'CallTransferRequested']);
  });

  it('a blocked caller owes no webhook', () => {
    const blocked: CallEvent = { type: 'CallStarted', data: { ...start, direction: 'Inbound', blocked: true } };
    const end = run([blocked], { type: 'End', time: 5_000, recordingUrl: null }) as CallEvent[];
    expect((end.at(-1)!.data as { webhook: unknown }).webhook).toBeNull();
  });
});
