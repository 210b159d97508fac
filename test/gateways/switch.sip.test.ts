/** The SIP switch (CONTRACT 16) against the Switch contract, with SIPp as the carrier and the callers. */
import { afterAll, beforeAll, describe } from 'vitest';
import { SipSwitch } from '../../src/gateways/switch/sip/sip-switch.js';
import type { Switch } from '../../src/gateways/switch/port.js';
import { hasSipp, scenario, startSipp, type Sipp } from '../support/sipp.js';
import { until } from '../support/until.js';
import { switchContract } from './switch.contract.js';

export const quietLog = { debug: () => undefined, info: () => undefined, warn: () => undefined };

describe.skipIf(!hasSipp && !process.env.REQUIRE_SIPP)('SIP switch with SIPp', () => {
  let trunk: Sipp;
  const callers: Sipp[] = [];
  beforeAll(async () => {
    trunk = await startSipp({ scenario: scenario('trunk-uas.xml') });
  });
  afterAll(async () => {
    await Promise.all(callers.map((c) => c.stop()));
    await trunk?.stop();
  });

  switchContract('sip', {
    open: () =>
      SipSwitch.start({ host: '127.0.0.1', port: 0, domain: '127.0.0.1', trunk: { transport: 'udp', host: '127.0.0.1', port: trunk.port }, ringTimeoutMs: 1500, log: quietLog }),
    numbers: { answers: '15550001234', busy: '15550000001', neverAnswers: '15550000000' },
    async inbound(sw: Switch, callId: string, legId: string, from: string) {
      const sip = sw as SipSwitch;
      sip.onInbound(async (offer) => {
        offer.bind(callId, false);
        return 'accepted';
      });
      const caller = await startSipp({ scenario: scenario('caller-uac.xml'), remote: `127.0.0.1:${sip.port}`, keys: { did: '5550100', caller: from, ivr: '12' }, args: ['-m', '1'] });
      callers.push(caller);
      await until(() => sip.pendingInbound.has(callId), `the INVITE reached the switch: ${caller.output()}`);
      sw.acceptInbound(callId, legId, from);
    },
  });
});
