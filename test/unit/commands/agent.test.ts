import { describe, expect, it } from 'vitest';
import { agentDecider, dashboardStatus, isFree, type AgentEvent } from '../../../src/commands/agent/agent.js';
import { deciderSpec } from '../../support/decider-spec.js';

const ids = { svcId: 101, agentId: 1001 };
const provisioned: AgentEvent = {
  type: 'AgentProvisioned',
  data: { ...ids, name: 'Asha', number: '9100001001', sip: 'asha', countryCode: '91', skills: [] },
};
const at = (time: number) => ({ ...ids, time });
const loggedIn: AgentEvent = { type: 'AgentLoggedIn', data: at(10) };

const { given } = deciderSpec(agentDecider);
const stateAfter = (events: AgentEvent[]) => given(events).state;

describe('agent decider: the transitions of CONTRACT section 6', () => {
  it('status=0 logs in from any state and answers break -1', () => {
    given([provisioned]).when({ type: 'SetState', status: 0, time: 20 }).then({ type: 'AgentLoggedIn', data: at(20) });
    const onBreak: AgentEvent = { type: 'AgentBreakStarted', data: { ...at(15), code: 3 } };
    given([provisioned, loggedIn, onBreak]).when({ type: 'SetState', status: 0, time: 20 }).then({ type: 'AgentLoggedIn', data: at(20) });
    const s = stateAfter([provisioned, loggedIn, onBreak, { type: 'AgentLoggedIn', data: at(20) }]);
    expect([s.status, s.breakCode]).toEqual([0, -1]);
  });

  it('status=0 when already logged in without a break appends nothing', () => {
    given([provisioned, loggedIn]).when({ type: 'SetState', status: 0, time: 20 }).thenNothingHappened();
  });

  it('status=2 and break=7 log out (status 2, break 7), and are refused on a call', () => {
    given([provisioned, loggedIn]).when({ type: 'SetState', status: 2, time: 30 }).then({ type: 'AgentLoggedOut', data: at(30) });
    given([provisioned, loggedIn]).when({ type: 'SetState', break: 7, time: 30 }).then({ type: 'AgentLoggedOut', data: at(30) });
    const s = stateAfter([provisioned, loggedIn, { type: 'AgentLoggedOut', data: at(30) }]);
    expect([s.status, s.breakCode]).toEqual([2, 7]);
    const onCall: AgentEvent = { type: 'AgentReserved', data: { ...at(25), xnid: 'x1' } };
    given([provisioned, loggedIn, onCall]).when({ type: 'SetState', status: 2, time: 30 }).thenThrows('CONFLICT');
    given([provisioned, loggedIn, onCall]).when({ type: 'SetState', break: 7, time: 30 }).thenThrows('CONFLICT');
  });

  it('break=1..6 puts the agent on a break (status 0, break N) and not free; break=0 frees it', () => {
    for (let code = 1; code <= 6; code++) {
      const started: AgentEvent = { type: 'AgentBreakStarted', data: { ...at(40), code } };
      given([provisioned, loggedIn]).when({ type: 'SetState', break: code, time: 40 }).then(started);
      const s = stateAfter([provisioned, loggedIn, started]);
      expect([s.status, s.breakCode, isFree(s, 50), dashboardStatus(s, 50)]).toEqual([0, code, false, '3']);
      const ended = stateAfter([provisioned, loggedIn, started, { type: 'AgentBreakEnded', data: at(60) }]);
      expect([ended.status, ended.breakCode, isFree(ended, 60), dashboardStatus(ended, 60)]).toEqual([0, 0, true, '0']);
    }
  });

  it('refuses break codes outside 0-7 and a command with neither status nor break', () => {
    given([provisioned, loggedIn]).when({ type: 'SetState', break: 8, time: 1 }).thenThrows('INVALID_PARAMETER');
    given([provisioned, loggedIn]).when({ type: 'SetState', status: 1, time: 1 }).thenThrows('INVALID_PARAMETER');
    given([provisioned, loggedIn]).when({ type: 'SetState', time: 1 }).thenThrows('INVALID_PARAMETER');
  });

  it('an agent never provisioned is 404', () => {
    given([]).when({ type: 'SetState', status: 0, time: 1 }).thenThrows('NOT_FOUND');
  });
});

describe('agent decider: calls', () => {
  const reserved: AgentEvent = { type: 'AgentReserved', data: { ...at(100), xnid: 'x1' } };

  it('only a free agent can be reserved, and a reserved agent cannot be taken by another call', () => {
    given([provisioned]).when({ type: 'Reserve', xnid: 'x1', time: 100 }).thenThrows('CONFLICT');
    given([provisioned, loggedIn]).when({ type: 'Reserve', xnid: 'x1', time: 100 }).then(reserved);
    given([provisioned, loggedIn, reserved]).when({ type: 'Reserve', xnid: 'x2', time: 101 }).thenThrows('CONFLICT');
    given([provisioned, loggedIn, reserved]).when({ type: 'Reserve', xnid: 'x1', time: 101 }).thenNothingHappened();
    const breakStarted: AgentEvent = { type: 'AgentBreakStarted', data: { ...at(90), code: 1 } };
    given([provisioned, loggedIn, breakStarted]).when({ type: 'Reserve', xnid: 'x1', time: 100 }).thenThrows('CONFLICT');
  });

  it('ringing shows "5", talking "1"; release frees the agent, after wrap-up when asked', () => {
    const ringing = stateAfter([provisioned, loggedIn, reserved]);
    expect(dashboardStatus(ringing, 100)).toBe('5');
    const answered: AgentEvent = { type: 'AgentAnswered', data: { ...at(110), xnid: 'x1' } };
    const talking = stateAfter([provisioned, loggedIn, reserved, answered]);
    expect(dashboardStatus(talking, 110)).toBe('1');
    const wrap: AgentEvent = { type: 'AgentWrapUpSet', data: { ...at(5), seconds: 30 } };
    const after = given([provisioned, wrap, loggedIn, reserved, answered])
      .when({ type: 'Release', xnid: 'x1', time: 200, wrapUp: true })
      .then({ type: 'AgentReleased', data: { ...at(200), xnid: 'x1', answered: true, freeAt: 30_200 } });
    expect([isFree(after, 30_199), dashboardStatus(after, 30_199)]).toEqual([false, '4']);
    expect([isFree(after, 30_200), dashboardStatus(after, 30_200)]).toEqual([true, '0']);
    // Without wrap-up (not a dialer call) the agent is free at once; releasing again changes nothing.
    const plain = given([provisioned, wrap, loggedIn, reserved, answered]).when({ type: 'Release', xnid: 'x1', time: 200 }).events();
    expect(plain[0]!.data).toMatchObject({ freeAt: 200 });
    given([provisioned, loggedIn, reserved, answered, ...plain]).when({ type: 'Release', xnid: 'x1', time: 201 }).thenNothingHappened();
  });

  it('keeps the latest 20 calls, newest first', () => {
    const events: AgentEvent[] = [provisioned, loggedIn];
    for (let i = 0; i < 25; i++) {
      events.push({ type: 'AgentReserved', data: { ...at(100 + i), xnid: `x${i}` } });
      events.push({ type: 'AgentReleased', data: { ...at(100 + i), xnid: `x${i}`, answered: false, freeAt: 100 + i } });
    }
    const s = stateAfter(events);
    expect(s.recentCalls).toHaveLength(20);
    expect(s.recentCalls[0]).toBe('x24');
    expect(s.recentCalls[19]).toBe('x5');
    // A call reserved again moves to the front, once; the rest keep their order, 20 in all.
    const again = stateAfter([...events, { type: 'AgentReserved', data: { ...at(200), xnid: 'x10' } }]);
    expect(again.recentCalls).toEqual(['x10', ...s.recentCalls.filter((x) => x !== 'x10')]);
    expect(s.recentCalls[0]).toBe('x24'); // the earlier state is not changed
  });
});
