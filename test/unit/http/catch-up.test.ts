/** Read-your-writes per event-loop turn (src/http/catch-up.ts): one caughtUp() per batch, asked after the batch's last arrival. */
import { describe, expect, it } from 'vitest';
import { catchUpBatches } from '../../../src/http/catch-up.js';

const turn = () => new Promise((r) => setImmediate(r));

describe('catchUpBatches', () => {
  it('requests of one turn share one caughtUp(), asked after all of them arrived; a later request asks again', async () => {
    const log: string[] = [];
    const wait = catchUpBatches({ caughtUp: async () => void log.push('caughtUp') }, () => {});
    wait(() => log.push('a'));
    wait(() => log.push('b'));
    log.push('arrived');
    await turn();
    await turn();
    expect(log).toEqual(['arrived', 'caughtUp', 'a', 'b']);
    wait(() => log.push('c'));
    await turn();
    await turn();
    expect(log).toEqual(['arrived', 'caughtUp', 'a', 'b', 'caughtUp', 'c']);
  });

  it('a failed wait fails every request of its batch; one continuation that throws does not stop the others', async () => {
    const failure = new Error('read models did not reach the head');
    const seen: unknown[] = [];
    const reported: unknown[] = [];
    const wait = catchUpBatches({ caughtUp: async () => Promise.reject(failure) }, (err) => reported.push(err));
    wait(() => {
      throw new Error('continuation');
    });
    wait((err) => seen.push(err));
    await turn();
    await turn();
    expect(seen).toEqual([failure]);
    expect(reported.map((e) => (e as Error).message)).toEqual(['continuation']);
  });
});
