/** The SIP switch from the settings (CONTRACT section 16), and its port bound or one line naming the setting. */
import { networkInterfaces } from 'node:os';
import { ConfigError, type Config } from './config.js';
import { SipSwitch, type SipLog } from './gateways/switch/sip/sip-switch.js';
import type { SipAccounts } from './gateways/switch/sip/registrar.js';
import type { DialogStore } from './gateways/switch/sip/lost-dialogs.js';

export function newSipSwitch(config: Config, log: SipLog & { child?(b: object): SipLog }, now: () => number, accounts: SipAccounts, dialogs?: DialogStore): SipSwitch {
  const c = config.switch;
  if (c.kind !== 'sip') throw new Error('not a SIP configuration');
  return new SipSwitch({
    host: c.host,
    port: c.port,
    domain: c.domain,
    trunk: c.trunk,
    ringTimeoutMs: c.ringTimeoutMs,
    log: log.child ? log.child({ component: 'sip' }) : log,
    advertise: advertised(c.host),
    now,
    accounts,
    dialogs,
  });
}

export async function listenSip(sw: SipSwitch, config: Config): Promise<void> {
  try {
    await sw.listen();
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const c = config.switch as Extract<Config['switch'], { kind: 'sip' }>;
    throw new ConfigError(`SIP_PORT: cannot listen on ${c.host}:${c.port} (UDP and TCP): ${e.code ?? e.message}; set SIP_HOST / SIP_PORT`);
  }
}

/** The address peers reach us at: SIP_HOST, or with a wildcard one of this host's addresses. */
function advertised(host: string): string {
  if (host !== '0.0.0.0' && host !== '::') return host;
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (!a.internal && a.family === 'IPv4') return a.address;
  }
  return '127.0.0.1';
}
