/** The given/when/then helper itself: it must fail when the decider does something else. */
import { describe, expect, it } from 'vitest';
import type { Decider, DomainEvent } from '../../src/commands/decider.js';
import { conflict } from '../../src/domain/errors.js';
import { deciderSpec } from '../support/decider-spec.js';

type E = DomainEvent<'Added', { n: number }>;
type C = { type: 'Add'; n: number } | { type: 'Refuse' };
/** A counter that appends Added unless the total would pass 10. */
const counter: Decider<C, { total: number }, E> = {
  initialState: () => ({ total: 0 }),
  evolve: (s, e) => ({ total: s.total + e.data.n }),
  decide: (c, s) => {
    if (c.type === 'Refuse') throw conflict('refused on purpose');
    return s.total + c.n > 10 ? [] : [{ type: 'Added', data: { n: c.n } }];
  },
};
const { given } = deciderSpec(counter);
const added = (n: number): E => ({ type: 'Added', data: { n } });

describe('deciderSpec', () => {
  it('then: the events and the state after them; several commands each see the state the previous left', () => {
    expect(given(added(2)).when({ type: 'Add', n: 3 }).then(added(3))).toEqual({ total: 5 });
    expect(given([added(2), added(3)]).state).toEqual({ total: 5 });
    given(added(4)).when({ type: 'Add', n: 3 }, { type: 'Add', n: 3 }, { type: 'Add', n: 3 }).then(added(3), added(3));
  });

  it('fails when the decider does something else', () => {
    expect(() => given().when({ type: 'Add', n: 1 }).then(added(2))).toThrow();
    expect(() => given().when({ type: 'Add', n: 1 }).thenNothingHappened()).toThrow();
    expect(() => given(added(10)).when({ type: 'Add', n: 1 }).then(added(1))).toThrow();
    expect(() => given().when({ type: 'Add', n: 1 }).thenMatches({ type: 'Added' }, { type: 'Added' })).toThrow();
    expect(() => given().when({ type: 'Add', n: 1 }).thenThrows('CONFLICT')).toThrow(/expected CONFLICT/);
    expect(() => given().when({ type: 'Refuse' }).thenThrows('NOT_FOUND')).toThrow();
    expect(() => given().when({ type: 'Refuse' }).thenThrows('CONFLICT', /another message/)).toThrow();
  });

  it('thenThrows answers the error; thenMatches takes partial events', () => {
    expect(given().when({ type: 'Refuse' }).thenThrows('CONFLICT', /on purpose/).status).toBe(409);
    given().when({ type: 'Add', n: 7 }).thenMatches({ data: { n: 7 } });
    given(added(10)).when({ type: 'Add', n: 1 }).thenNothingHappened();
  });
});
