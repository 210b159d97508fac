/**
 * Given / when / then for deciders: given past events, when a command (or several, each decided on
 * the state the previous ones left), then these events, nothing, or this error. Every decider's unit
 * tests read the same way, and none needs I/O.
 *
 *   const spec = deciderSpec(smsDecider);
 *   spec.given(requested).when({ type: 'RecordAttempt', attempt: 1, ok: true, time: 5 }).then(sent);
 *   spec.given().when(cmd).thenThrows('NOT_FOUND', /no such/);
 *
 * `then` and `thenNothingHappened` return the state after the given and the new events, for the
 * assertions on `evolve` that belong beside them.
 */
import { expect } from 'vitest';
import type { Decider, DomainEvent } from '../../src/commands/decider.js';
import { AppError, type ErrorCode } from '../../src/domain/errors.js';

export interface WhenClause<S, E> {
  /** The command produced exactly these events, in this order. */
  then(...expected: E[]): S;
  /** The command produced events matching these (partial objects, `expect.any` and the like), in this order. */
  thenMatches(...expected: unknown[]): S;
  /** The command produced no event. */
  thenNothingHappened(): S;
  /** The command was refused with an AppError of this code (and a message matching, when given). */
  thenThrows(code: ErrorCode, message?: RegExp | string): AppError;
  /** The events produced, for assertions of another shape. */
  events(): E[];
}

export interface GivenClause<C, S, E> {
  /** The state the given events fold into. */
  readonly state: S;
  when(command: C, ...more: C[]): WhenClause<S, E>;
}

export function deciderSpec<C, S, E extends DomainEvent>(decider: Decider<C, S, E>) {
  const foldAll = (from: S, events: readonly E[]) => events.reduce((s, e) => decider.evolve(s, e), from);
  return {
    given(...history: Array<E | readonly E[]>): GivenClause<C, S, E> {
      const past = history.flat() as E[];
      // Folded afresh for each question, so a decider that mutated its state could not pass unnoticed.
      const before = () => foldAll(decider.initialState(), past);
      return {
        get state() {
          return before();
        },
        when(command: C, ...more: C[]): WhenClause<S, E> {
          const decideAll = (): E[] => {
            let state = before();
            const out: E[] = [];
            for (const c of [command, ...more]) {
              const events = decider.decide(c, state);
              state = foldAll(state, events);
              out.push(...events);
            }
            return out;
          };
          const after = (events: E[]) => foldAll(before(), events);
          return {
            then(...expected) {
              const events = decideAll();
              expect(events).toEqual(expected);
              return after(events);
            },
            thenMatches(...expected) {
              const events = decideAll();
              expect(events).toHaveLength(expected.length);
              expect(events).toMatchObject(expected);
              return after(events);
            },
            thenNothingHappened() {
              expect(decideAll()).toEqual([]);
              return before();
            },
            thenThrows(code, message) {
              let thrown: unknown = null;
              let events: E[] | null = null;
              try {
                events = decideAll();
              } catch (err) {
                thrown = err;
              }
              if (events) expect.fail(`expected ${code}, but the command produced ${JSON.stringify(events.map((e) => e.type))}`);
              if (!(thrown instanceof AppError)) throw thrown;
              expect(thrown.code).toBe(code);
              if (message !== undefined) expect(thrown.message).toMatch(message);
              return thrown;
            },
            events: decideAll,
          };
        },
      };
    },
  };
}
