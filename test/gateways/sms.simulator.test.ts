/** The simulated SMS provider against the SmsGateway contract, and its outbox (GET /ops/v1/simulator/sms). */
import { describe, expect, it } from 'vitest';
import { SqliteReadStore } from '../../src/gateways/read-store/sqlite.js';
import { SimulatedSmsGateway } from '../../src/gateways/sms/simulator.js';
import { smsGatewayContract } from './sms.contract.js';

smsGatewayContract('simulator', {
  async open() {
    const reads = new SqliteReadStore(':memory:');
    const gateway = new SimulatedSmsGateway(reads, Date.now);
    return { gateway, taken: () => gateway.outbox(), close: () => reads.close() };
  },
});

describe('simulated SMS outbox', () => {
  it('keeps each message with the time the provider took it, oldest first, and filters by number', async () => {
    const reads = new SqliteReadStore(':memory:');
    let clock = 1_000;
    const gateway = new SimulatedSmsGateway(reads, () => clock);
    try {
      await gateway.send({ id: 'b', svcId: 101, number: '9876500002', message: 'two' });
      clock = 500;
      await gateway.send({ id: 'a', svcId: 101, number: '9876500001', message: 'one' });
      clock = 2_000;
      // A retry keeps the first delivery's time.
      await gateway.send({ id: 'b', svcId: 101, number: '9876500002', message: 'two' });
      expect(await gateway.outbox()).toEqual([
        { id: 'a', svcId: 101, number: '9876500001', message: 'one', time: 500 },
        { id: 'b', svcId: 101, number: '9876500002', message: 'two', time: 1_000 },
      ]);
      expect((await gateway.outbox('9876500002')).map((m) => m.id)).toEqual(['b']);
    } finally {
      await reads.close();
    }
  });
});
