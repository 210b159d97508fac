/**
 * The typed-event helpers. Half of what they promise is checked by the compiler (`npm run typecheck`
 * covers test/): the `@ts-expect-error` lines below fail the typecheck if a name outside the union
 * stops being an error.
 */
import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../../src/gateways/event-store/port.js';
import { allTypes, eventTypes, isEvent, numberField } from '../../src/commands/platform-events.js';
import { isLegEvent, toSocketEvent } from '../../src/domain/call-events.js';
import { projection, type Projection } from '../../src/projections/projection.js';
import { projections } from '../../src/projections/index.js';

const recorded = (type: string, data: unknown, position = 1): RecordedEvent => ({ id: `e${position}`, streamId: 'call-x', revision: position - 1, position, type, data, metadata: {}, time: 1000 });

const leg = { xnid: 'x', svcId: 101, agentId: 7, number: '9876543210', time: 5, data: '', direction: 'Inbound' as const, legId: 'l1' };

describe('typed events', () => {
  it('isEvent narrows a stored event to the named types and their data', () => {
    const e = recorded('AgentRing', leg);
    expect(isEvent(e, 'AgentRing', 'AgentUp')).toBe(true);
    expect(isEvent(e, 'CallEnded')).toBe(false);
    if (isEvent(e, 'AgentRing', 'CallEnded')) {
      // Narrowed: each case sees its own data, no cast.
      const agent = e.type === 'AgentRing' ? e.data.agentId : e.data.agentId;
      expect(agent).toBe(7);
    }
    // @ts-expect-error a type outside the union
    isEvent(e, 'AgentRang');
  });

  it('eventTypes is a typed set; allTypes lists a union completely', () => {
    const calls = eventTypes('CallStarted', 'CallEnded');
    expect(calls.list).toEqual(['CallStarted', 'CallEnded']);
    expect(calls.has(recorded('CallEnded', {}))).toBe(true);
    expect(calls.has(recorded('CallQueued', {}))).toBe(false);
    // @ts-expect-error a type outside the union
    eventTypes('CallStarted', 'CallFinished');
    type Two = 'SmsSent' | 'SmsFailed';
    expect(allTypes<Two>({ SmsSent: true, SmsFailed: true })).toEqual(['SmsSent', 'SmsFailed']);
    // @ts-expect-error one of the union's types left out
    allTypes<Two>({ SmsSent: true });
  });

  it('numberField reads svcId or agentId from any event, undefined when absent or not a number', () => {
    expect(numberField(recorded('X', { svcId: 5 }), 'svcId')).toBe(5);
    expect(numberField(recorded('X', { svcId: '5' }), 'svcId')).toBeUndefined();
    expect(numberField(recorded('X', null), 'agentId')).toBeUndefined();
    expect(numberField(recorded('X', 'text'), 'svcId')).toBeUndefined();
  });

  it('isLegEvent narrows to a leg event the socket event is built from', () => {
    const e = recorded('CustomerUp', leg);
    expect(isLegEvent(e)).toBe(true);
    expect(isLegEvent(recorded('CallBridged', leg))).toBe(false);
    if (isLegEvent(e)) expect(toSocketEvent(e)).toMatchObject({ event: 'CustomerUp', agent: '7', svc: '101' });
  });

  it('a projection sees only the event types it declares', () => {
    const seen: string[] = [];
    const p: Projection<{ n: number }> = projection({
      name: 'test',
      canHandle: ['CallStarted', 'CallEnded'],
      keys: (e) => {
        seen.push(e.type);
        return [e.data.xnid];
      },
      evolve: (doc) => ({ n: (doc?.n ?? 0) + 1 }),
    });
    expect(p.canHandle).toEqual(['CallStarted', 'CallEnded']);
    expect(p.keys(recorded('CallQueued', { xnid: 'x' }))).toEqual([]);
    expect(p.keys(recorded('CallEnded', { xnid: 'x' }))).toEqual(['x']);
    expect(seen).toEqual(['CallEnded']);
    projection({
      name: 'bad',
      // @ts-expect-error a type outside the union
      canHandle: ['CallStarted', 'CallFinished'],
      keys: () => [],
      evolve: () => null,
    });
  });

  it('every read model declares the event types it handles, each once', () => {
    for (const p of projections) {
      const names = p.canHandle ?? [];
      expect(names.length, p.name).toBeGreaterThan(0);
      expect(new Set(names).size, p.name).toBe(names.length);
    }
  });
});
