/** The routing policy of CONTRACT section 17: examples, and properties over random callers and agents (fast-check). */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { agentsFor, agentsLeftFor, assignAgents, compareCallers, expectedWaitMs, mayTake, queueForDigits, routedCaller, type RoutedAgent, type RoutedCaller } from '../../src/domain/routing.js';

const SKILLS = [1, 2, 3];

const agentArb = (agentId: number) =>
  fc.record({
    agentId: fc.constant(agentId),
    freeSince: fc.integer({ min: 0, max: 100_000 }),
    skills: fc.uniqueArray(fc.record({ skillId: fc.constantFrom(...SKILLS), level: fc.integer({ min: 0, max: 10 }) }), { selector: (k) => k.skillId, maxLength: 3 }),
  });
const agentsArb = fc.integer({ min: 0, max: 8 }).chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => agentArb(1000 + i))) as fc.Arbitrary<RoutedAgent[]>);

const callerArb = (id: string) =>
  fc.record({
    id: fc.constant(id),
    queuePriority: fc.integer({ min: 0, max: 3 }),
    customerPriority: fc.integer({ min: 0, max: 3 }),
    queuedAt: fc.integer({ min: 0, max: 100_000 }),
    skillId: fc.option(fc.constantFrom(...SKILLS), { nil: null }),
    strict: fc.boolean(),
    overflowS: fc.option(fc.integer({ min: 0, max: 60 }), { nil: null }),
  }).map(({ overflowS, ...c }): RoutedCaller => ({ ...c, strict: c.skillId !== null && c.strict, overflowAt: c.skillId !== null && c.strict && overflowS !== null ? c.queuedAt + overflowS * 1000 : null }));
const callersArb = fc.integer({ min: 0, max: 10 }).chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => callerArb(`c${i}`))) as fc.Arbitrary<RoutedCaller[]>);
const nowArb = fc.integer({ min: 100_000, max: 200_000 });

const hasSkill = (a: RoutedAgent, skillId: number) => a.skills.some((k) => k.skillId === skillId);

describe('queue selection by IVR digits', () => {
  const queues = [
    { id: 1, name: 'General' },
    { id: 2, name: 'Sales', digits: '1' },
    { id: 3, name: 'Sales renewals', digits: '12' },
    { id: 4, name: 'Support', digits: '2' },
  ];
  it('the longest matching digits win; anything else joins the first queue; no queue: null', () => {
    expect(queueForDigits(queues, '1')?.id).toBe(2);
    expect(queueForDigits(queues, '129')?.id).toBe(3);
    expect(queueForDigits(queues, '13')?.id).toBe(2);
    expect(queueForDigits(queues, '2')?.id).toBe(4);
    expect(queueForDigits(queues, '3')?.id).toBe(1);
    expect(queueForDigits(queues, '')?.id).toBe(1);
    expect(queueForDigits([], '1')).toBeNull();
  });
});

describe('caller and agent order', () => {
  const at = (queuedAt: number, extra: Partial<RoutedCaller> = {}): RoutedCaller => ({ id: `q${queuedAt}`, queuePriority: 0, customerPriority: 0, queuedAt, skillId: null, strict: false, overflowAt: null, ...extra });
  it('queue priority, then customer priority, then longest waiting', () => {
    const order = [at(5), at(9, { customerPriority: 5 }), at(1), at(20, { queuePriority: 1 })].sort(compareCallers).map((c) => c.id);
    expect(order).toEqual(['q20', 'q9', 'q1', 'q5']);
  });
  it('a skilled queue: highest level first, then longest free; unskilled agents only after overflowS', () => {
    const agents: RoutedAgent[] = [
      { agentId: 1, freeSince: 10, skills: [] },
      { agentId: 2, freeSince: 30, skills: [{ skillId: 1, level: 9 }] },
      { agentId: 3, freeSince: 20, skills: [{ skillId: 1, level: 3 }] },
      { agentId: 4, freeSince: 5, skills: [{ skillId: 1, level: 9 }] },
    ];
    const caller = routedCaller('x', { inbound: true, queue: { id: 1, name: 'S', skillId: 1, overflowS: 30 }, customerPriority: 0, skillId: null, queuedAt: 1000 });
    expect(agentsFor(caller, agents, 1000).map((a) => a.agentId)).toEqual([4, 2, 3]);
    expect(agentsFor(caller, agents, 30_999).map((a) => a.agentId)).toEqual([4, 2, 3]);
    expect(agentsFor(caller, agents, 31_000).map((a) => a.agentId)).toEqual([4, 2, 3, 1]);
  });
  it('without the routing fields: any agent, longest free first; a skill-id call prefers skilled agents', () => {
    const agents: RoutedAgent[] = [
      { agentId: 1, freeSince: 10, skills: [] },
      { agentId: 2, freeSince: 5, skills: [{ skillId: 2, level: 1 }] },
    ];
    const plain = routedCaller('p', { inbound: true, queue: { id: 1, name: 'Q' }, customerPriority: 7, skillId: null, queuedAt: 0 });
    expect(plain).toMatchObject({ queuePriority: 0, customerPriority: 7, strict: false, skillId: null });
    expect(agentsFor(plain, agents, 0).map((a) => a.agentId)).toEqual([2, 1]);
    const outbound = routedCaller('o', { inbound: false, queue: null, customerPriority: 7, skillId: 2, queuedAt: 0 });
    expect(outbound.customerPriority).toBe(0);
    expect(agentsFor(outbound, agents, 0).map((a) => a.agentId)).toEqual([2]);
    expect(agentsFor({ ...outbound, skillId: 3 }, agents, 0).map((a) => a.agentId)).toEqual([2, 1]);
  });
});

describe('routing invariants (property tests)', () => {
  it('no agent gets two callers, and every agent given is one of the free agents the caller may take', () => {
    fc.assert(
      fc.property(callersArb, agentsArb, nowArb, (callers, agents, now) => {
        const given = assignAgents(callers, agents, now);
        const ids = [...given.values()];
        expect(new Set(ids).size).toBe(ids.length);
        for (const [cid, aid] of given) {
          const agent = agents.find((a) => a.agentId === aid)!;
          expect(mayTake(callers.find((c) => c.id === cid)!, agent, now)).toBe(true);
        }
      }),
    );
  });

  it('no caller is passed over by a caller of lower or equal rank who arrived later', () => {
    fc.assert(
      fc.property(callersArb, agentsArb, nowArb, (callers, agents, now) => {
        const given = assignAgents(callers, agents, now);
        for (const a of callers) {
          if (given.has(a.id)) continue;
          for (const b of callers) {
            const agentId = given.get(b.id);
            if (agentId === undefined || compareCallers(a, b) >= 0) continue;
            // b ranks after a and got an agent a has none: a could not take it.
            expect(mayTake(a, agents.find((x) => x.agentId === agentId)!, now)).toBe(false);
          }
        }
      }),
    );
  });

  it('a skilled queue never takes an unskilled agent before overflowS', () => {
    fc.assert(
      fc.property(callersArb, agentsArb, nowArb, (callers, agents, now) => {
        for (const [cid, aid] of assignAgents(callers, agents, now)) {
          const c = callers.find((x) => x.id === cid)!;
          if (!c.strict || (c.overflowAt !== null && now >= c.overflowAt)) continue;
          expect(hasSkill(agents.find((a) => a.agentId === aid)!, c.skillId!)).toBe(true);
        }
      }),
    );
  });

  it('a caller competing with waiting callers tries first the agent the whole assignment would give it', () => {
    fc.assert(
      fc.property(callersArb, callerArb('new'), agentsArb, nowArb, (waiting, caller, agents, now) => {
        const first = agentsLeftFor(caller, waiting, agents, now)[0];
        expect(first).toBe(assignAgents([...waiting, caller], agents, now).get('new'));
      }),
    );
  });

  it('every waiting caller is eventually offered when agents free up', () => {
    // Each strict caller either has a skilled agent in the team or overflows.
    const servable = fc
      .tuple(callersArb, agentsArb.filter((a) => a.length > 0))
      .filter(([callers, agents]) => callers.every((c) => !c.strict || c.overflowAt !== null || agents.some((a) => hasSkill(a, c.skillId!))));
    fc.assert(
      fc.property(servable, nowArb, ([callers, agents], start) => {
        let waiting = callers;
        let now = start;
        // One round a second: whoever is given an agent talks and the agent is free again next round.
        for (let round = 0; round < callers.length + 61 && waiting.length > 0; round++) {
          const given = assignAgents(waiting, agents, now);
          waiting = waiting.filter((c) => !given.has(c.id));
          agents = agents.map((a) => ([...given.values()].includes(a.agentId) ? { ...a, freeSince: now } : a));
          now += 1000;
        }
        expect(waiting).toEqual([]);
      }),
    );
  });
});

describe('expected wait', () => {
  it('0 with an agent free for the newcomer; the callers ahead take the earliest agents in turn; null without a basis', () => {
    expect(expectedWaitMs(0, [1000, 5000], 60_000, 1000)).toBe(0);
    expect(expectedWaitMs(1, [1000, 5000], 60_000, 1000)).toBe(4000);
    // Two ahead, agents free at 5 s and 10 s, calls of 60 s: the first ahead takes 5 s, the second 10 s, the newcomer 65 s.
    expect(expectedWaitMs(2, [5000, 10_000], 60_000, 0)).toBe(65_000);
    expect(expectedWaitMs(0, [], 60_000, 0)).toBeNull();
    expect(expectedWaitMs(0, [5000], null, 0)).toBeNull();
  });
  it('never shorter with more callers ahead', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 20 }), fc.array(fc.integer({ min: 0, max: 100_000 }), { minLength: 1, maxLength: 8 }), fc.integer({ min: 1, max: 300_000 }), (ahead, at, handle) => {
        expect(expectedWaitMs(ahead + 1, at, handle, 50_000)!).toBeGreaterThanOrEqual(expectedWaitMs(ahead, at, handle, 50_000)!);
      }),
    );
  });
});
