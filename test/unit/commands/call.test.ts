import { describe, expect, it } from 'vitest';
import { callDecider, type CallCommand, type CallEvent, type CallStartedData } from '../../../src/commands/call/call.js';
import { deciderSpec } from '../../support/decider-spec.js';

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

const { given } = deciderSpec(callDecider);
const types = (events: CallEvent[]) => events.map((e) => e.type);
const started: CallEvent = { type: 'CallStarted', data: start };
const ringCustomer = (time: number): CallCommand => ({ type: 'Ring', legId: 'c', role: 'customer', agentId: null, number: '9876543210', time });
const ringAgent = (time: number, agentId = 1001): CallCommand => ({ type: 'Ring', legId: 'a', role: 'agent', agentId, number: '9100001001', time });
/** The events the commands add after `CallStarted` (each decided on the state the previous left). */
const history = (...commands: CallCommand[]) => [started, ...given(started).when(commands[0]!, ...commands.slice(1)).events()];

describe('call decider', () => {
  it('starting twice appends once', () => {
    given().when({ type: 'Start', data: start }, { type: 'Start', data: start }).then(started);
  });

  it('a leg rings, answers and hangs up once; answering a leg that never rang is refused', () => {
    const events = given(started)
      .when(ringCustomer(2_000), ringCustomer(2_001), { type: 'Answer', legId: 'c', time: 3_000 }, { type: 'Answer', legId: 'c', time: 3_001 }, { type: 'Down', legId: 'c', time: 4_000 }, { type: 'Down', legId: 'c', time: 4_001 })
      .events();
    expect(types(events)).toEqual(['CustomerRing', 'CustomerUp', 'CustomerHangup']);
    given(started).when({ type: 'Answer', legId: 'x', time: 1 }).thenThrows('CONFLICT');
  });

  it('customer events carry the agent once one answered; agent events their own agent', () => {
    const events = given(started).when(ringAgent(2_000), { type: 'Answer', legId: 'a', time: 2_100 }, ringCustomer(2_200)).events();
    expect(events.map((e) => (e.data as { agentId: number | null }).agentId)).toEqual([1001, 1001, 1001]);
    expect(events[2]!.data).toMatchObject({ xnid, svcId: 101, number: '9876543210', time: 2_200, data: '', direction: 'Outbound' });
  });

  it('End computes disposition, times, duration and the webhook record; nothing happens after it', () => {
    const past = history(
      ringCustomer(10_000),
      { type: 'Answer', legId: 'c', time: 11_000 },
      ringAgent(11_500),
      { type: 'Answer', legId: 'a', time: 12_000 },
      { type: 'Bridge', agentId: 1001, agentName: 'Asha', agentNumber: '9100001001', time: 12_000 },
      { type: 'Down', legId: 'c', time: 75_900 },
      { type: 'Down', legId: 'a', time: 76_000 },
    );
    const ended: CallEvent = {
      type: 'CallEnded',
      data: {
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
        // How it started, said again so that followers of call ends need not read the call back.
        source: null,
      },
    } as CallEvent;
    given(past).when({ type: 'End', time: 76_100, recordingUrl: 'http://x/recordings/r.wav' }).then(ended);
    const after = [...past, ended];
    given(after).when({ type: 'End', time: 80_000, recordingUrl: null }).thenNothingHappened();
    given(after).when({ type: 'RequestHangup', userId: 1, time: 80_000 }).thenThrows('CONFLICT');
    given(after).when({ type: 'Ring', legId: 'z', role: 'agent', agentId: 1002, number: '1', time: 80_000 }).thenThrows('CONFLICT');
  });

  it('End closes legs a lost switch left open, and a missed call has no recording and no agent', () => {
    const end = given(history(ringCustomer(10_000))).when({ type: 'End', time: 12_000, recordingUrl: 'http://x' });
    const state = end.thenMatches({ type: 'CustomerHangup' }, { type: 'CallEnded', data: { disposition: 'missed', recordingUrl: null, agentNumber: '', durationS: 2 } });
    expect(state.ended).toBe(true);
    expect((end.events()[1]!.data as { webhook: object }).webhook).not.toHaveProperty('recording-url');
  });

  it('a transfer needs the named agent to be talking on the call', () => {
    const past = history(ringCustomer(1), { type: 'Answer', legId: 'c', time: 2 }, ringAgent(3));
    given(past).when({ type: 'RequestTransfer', fromAgentId: 1001, toAgentId: 1002, mode: 'BLIND', time: 4 }).thenThrows('CONFLICT');
    given(past)
      .when({ type: 'Answer', legId: 'a', time: 4 }, { type: 'RequestTransfer', fromAgentId: 1001, toAgentId: 1002, mode: 'BLIND', time: 5 })
      .thenMatches({ type: 'AgentUp' }, { type: 'CallTransferRequested' });
  });

  it('a blocked caller owes no webhook', () => {
    const blocked: CallEvent = { type: 'CallStarted', data: { ...start, direction: 'Inbound', blocked: true } };
    const end = given(blocked).when({ type: 'End', time: 5_000, recordingUrl: null }).events();
    expect((end.at(-1)!.data as { webhook: unknown }).webhook).toBeNull();
  });
});
