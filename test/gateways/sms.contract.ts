/** One contract for every SmsGateway adapter (src/gateways/sms/port.ts): what the SMS worker relies on. */
import { afterEach, describe, expect, it } from 'vitest';
import type { OutgoingSms, SmsGateway } from '../../src/gateways/sms/port.js';

export interface SmsHarness {
  /** A gateway, with what its provider has taken so far (as the provider reports it) and a way to close both. */
  open(): Promise<{ gateway: SmsGateway; taken(): Promise<OutgoingSms[]>; close(): Promise<void> }>;
}

let seq = 0;
const sms = (over: Partial<OutgoingSms> = {}): OutgoingSms => ({ id: `sms-${process.pid}-${++seq}`, svcId: 101, number: '9876543210', message: 'hello', ...over });

export function smsGatewayContract(adapter: string, harness: SmsHarness) {
  describe(`SmsGateway contract: ${adapter}`, () => {
    const opened: Array<() => Promise<void>> = [];
    const open = async () => {
      const h = await harness.open();
      opened.push(h.close);
      return h;
    };
    afterEach(async () => {
      await Promise.allSettled(opened.splice(0).map((close) => close()));
    });

    it('once send resolves, the provider has the message as given', async () => {
      const { gateway, taken } = await open();
      const m = sms({ message: 'Namaste 🙏: your code is in the app; ünïcödé, "quotes", new\nline' });
      await gateway.send(m);
      expect((await taken()).filter((t) => t.id === m.id)).toEqual([expect.objectContaining(m)]);
    });

    it('the same id sent again (a retry after a lost answer), even at once, is sent once', async () => {
      const { gateway, taken } = await open();
      const m = sms();
      await Promise.all([gateway.send(m), gateway.send(m)]);
      await gateway.send(m);
      expect((await taken()).filter((t) => t.id === m.id)).toHaveLength(1);
    });

    it('different ids to one number are different messages', async () => {
      const { gateway, taken } = await open();
      const a = sms({ number: '9876500011' });
      const b = sms({ number: '9876500011', message: 'again' });
      await gateway.send(a);
      await gateway.send(b);
      const mine = (await taken()).filter((t) => t.id === a.id || t.id === b.id);
      expect(mine.map((t) => t.message).sort()).toEqual(['again', 'hello']);
    });
  });
}
