/**
 * What the PostgreSQL adapters' deadlines and a lost link throw is answered 503 UNAVAILABLE (the
 * contract's error body), not 500; a server's own answer (an SQLSTATE) is not mistaken for it.
 * test/faults/multi-host.test.ts shows the same on a host cut off from its database.
 */
import { describe, expect, it } from 'vitest';
import { toAppError } from '../../src/http/errors.js';
import { isTimeout, isUnreachable, timed, ANSWER_MS } from '../../src/gateways/postgres.js';

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

describe('PostgreSQL unreachable', () => {
  it.each([
    new Error('Query read timeout'),
    new Error('timeout expired'),
    new Error('Connection terminated due to connection timeout'),
    new Error('timeout exceeded when trying to connect'),
    new Error('Connection terminated unexpectedly'),
    withCode('connect EHOSTUNREACH 10.232.1.1:5432', 'EHOSTUNREACH'),
    withCode('connect ENETUNREACH 10.232.1.1:5432', 'ENETUNREACH'),
    withCode('read ECONNRESET', 'ECONNRESET'),
  ])('$message answers 503 UNAVAILABLE', (err) => {
    expect(isUnreachable(err)).toBe(true);
    expect(toAppError(err)).toMatchObject({ code: 'UNAVAILABLE', status: 503 });
  });

  it('a server error, or any other failure, is not taken for an unreachable server', () => {
    const serverSaid = withCode('canceling statement due to statement timeout', '57014');
    expect(isUnreachable(serverSaid)).toBe(false);
    expect(isUnreachable(new Error('boom'))).toBe(false);
    expect(toAppError(new Error('boom'))).toBeNull();
  });

  it('only deadlines count as timeouts (a broken connection is resent: the ids make it safe)', () => {
    expect(isTimeout(new Error('Query read timeout'))).toBe(true);
    expect(isTimeout(new Error('Connection terminated unexpectedly'))).toBe(false);
  });

  it('timed() sets pg’s query_timeout on the query', () => {
    expect(timed({ text: 'SELECT 1' })).toMatchObject({ query_timeout: ANSWER_MS });
    expect(timed({ text: 'SELECT 1' }, 5)).toMatchObject({ query_timeout: 5 });
  });
});
