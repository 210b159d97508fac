import { describe, expect, it } from 'vitest';
import { agentDecider, dashboardStatus, isFree, type AgentCommand, type AgentEvent } from '../../src/commands/agent/agent.js';
import { fold } from '../../src/commands/decider.js';
import { AppError } from '../../src/domain/errors.js';

const ids = { svcId: 101, agentId: 1001 };
const provisioned: AgentEvent = {
  type: 'AgentProvisioned',
  data: { ...ids, name: 'Asha', number: '9100001001', sip: 'asha', countryCode: '91', skills: [] },
};
const at = (time: number) => ({ ...ids, time });
const loggedIn: AgentEvent = { type: 'AgentLoggedIn', data: at(10) };

/** given events, when command: then events (or the error code). */
function when(given: AgentEvent[], command: AgentCommand): AgentEvent[] | string {
  try {
    return agentDecider.decide(command, fold(agentDecider, given));
  } catch (err) {
    if (err instanceof AppError) return err.code;
    throw err;
  }
}
const stateAfter = (events: AgentEvent[]) => fold(agentDecider, events);

describe('agent decider: the transitions of CONTRACT section 6', () => {
  it('status=0 logs in from any state and answers break -1', () => {
    expect(when([provisioned], { type: 'SetState', status: 0, time: 20 })).toEqual([{ type: 'AgentLoggedIn', data: at(20) }]);
    const onBreak: AgentEvent = { type: 'AgentBreakStarted', data: { ...at(15), code: 3 } };
    expect(when([provisioned, loggedIn, onBreak], { type: 'SetState', status: 0, time: 20 })).toEqual([{ type: 'AgentLoggedIn', data: at(20) }]);
    const s = stateAfter([provisioned, loggedIn, onBreak, { type: 'AgentLoggedIn', data: at(20) }]);
    expect([s.status, s.breakCode]).toEqual([0, -1]);
  });

  it('status=0 when already logged in without a break appends nothing', () => {
    expect(when([provisioned, loggedIn], { type: 'SetState', status: 0, time: 20 })).toEqual([]);
  });

  it('status=2 and break=7 log out (status 2, break 7), and are refused on a call', () => {
    expect(when([provisioned, loggedIn], { type: 'SetState', status: 2, time: 30 })).toEqual([{ type: 'AgentLoggedOut', data: at(30) }]);
    expect(when([provisioned, loggedIn], { type: 'SetState', break: 7, time: 30 })).toEqual([{ type: 'AgentLoggedOut', data: at(30) }]);
    const s = stateAfter([provisioned, loggedIn, { type: 'AgentLoggedOut', data: at(30) }]);
    expect([s.status, s.breakCode]).toEqual([2, 7]);
    const onCall: AgentEvent = { type: 'AgentReserved', data: { ...at(25), xnid: 'x1' } };
    expect(when([provisioned, loggedIn, onCall], { type: 'SetState', status: 2, time: 30 })).toBe('CONFLICT');
    expect(when([provisioned, loggedIn, onCall], { type: 'SetState', break: 7, time: 30 })).toBe('CONFLICT');
  });

  it('break=1..6 puts the agent on a break (status 0, break N) and not free; break=0 frees it', () => {
    for (let code = 1; code <= 6; code++) {
      const started: AgentEvent = { type: 'AgentBreakStarted', data: { ...at(40), code } };
      expect(when([provisioned, loggedIn], { type: 'SetState', break: code, time: 40 })).toEqual([started]);
      const s = stateAfter([provisioned, loggedIn, started]);
      expect([s.status, s.breakCode, isFree(s, 50), dashboardStatus(s, 50)]).toEqual([0, code, false, '3']);
      const ended = stateAfter([provisioned, loggedIn, started, { type: 'AgentBreakEnded', data: at(60) }]);
      expect([ended.status, ended.breakCode, isFree(ended, 60), dashboardStatus(ended, 60)]).toEqual([0, 0, true, '0']);
    }
  });

  it('refuses break codes outside 0-7 and a command with neither status nor break', () => {
    expect(when([provisioned, loggedIn], { type: 'SetState', break: 8, time: 1 })).toBe('INVALID_PARAMETER');
    expect(when([provisioned, loggedIn], { type: 'SetState', status: 1, time: 1 })).toBe('INVALID_PARAMETER');
    expect(when([provisioned, loggedIn], { type: 'SetState', time: 1 })).toBe('INVALID_PARAMETER');
  });

  it('an agent never provisioned is 404', () => {
    expect(when([], { type: 'SetState', status: 0, time: 1 })).toBe('NOT_FOUND');
  });
});

describe('agent decider: calls', () => {
  const reserved: AgentEvent = { type: 'AgentReserved', data: { ...at(100), xnid: 'x1' } };

  it('only a free agent can be reserved, and a reserved agent cannot be taken by another call', () => {
    expect(when([provisioned], { type: 'Reserve', xnid: 'x1', time: 100 })).toBe('CONFLICT');
    expect(when([provisioned, loggedIn], { type: 'Reserve', xnid: 'x1', time: 100 })).toEqual([reserved]);
    expect(when([provisioned, loggedIn, reserved], { type: 'Reserve', xnid: 'x2', time: 101 })).toBe('CONFLICT');
    expect(when([provisioned, loggedIn, reserved], { type: 'Reserve', xnid: 'x1', time: 101 })).toEqual([]);
    const breakStarted: AgentEvent = { type: 'AgentBreakStarted', data: { ...at(90), code: 1 } };
    expect(when([provisioned, loggedIn, breakStarted], { type: 'Reserve', xnid: 'x1', time: 100 })).toBe('CONFLICT');
  });

  it('ringing shows "5", talking "1"; release frees the agent, after wrap-up when asked', () => {
    const ringing = stateAfter([provisioned, loggedIn, reserved]);
    expect(dashboardStatus(ringing, 100)).toBe('5');
    const answered: AgentEvent = { type: 'AgentAnswered', data: { ...at(110), xnid: 'x1' } };
    const talking = stateAfter([provisioned, loggedIn, reserved, answered]);
    expect(dashboardStatus(talking, 110)).toBe('1');
    const wrap: AgentEvent = { type: 'AgentWrapUpSet', data: { ...at(5), seconds: 30 } };
    const released = when([provisioned, wrap, loggedIn, reserved, answered], { type: 'Release', xnid: 'x1', time: 200, wrapUp: true });
    expect(released).toEqual([{ type: 'AgentReleased', data: { ...at(200), xnid: 'x1', answered: true, freeAt: 30_200 } }]);
    const after = stateAfter([provisioned, wrap, loggedIn, reserved, answered, ...(released as AgentEvent[])]);
    expect([isFree(after, 30_199), dashboardStatus(after, 30_199)]).toEqual([false, '4']);
    expect([isFree(after, 30_200), dashboardStatus(after, 30_200)]).toEqual([true, '0']);
    // Without wrap-up (not a dialer call) the agent is free at once; releasing again changes nothing.
    const plain = when([provisioned, wrap, loggedIn, reserved, answered], { type: 'Release', xnid: 'x1', time: 200 });
    expect((plain as AgentEvent[])[0]!.data).toMatchObject({ freeAt: 200 });
    expect(when([provisioned, loggedIn, reserved, answered, ...(plain as AgentEvent[])], { type: 'Release', xnid: 'x1', time: 201 })).toEqual([]);
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
  });
});
