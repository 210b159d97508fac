/**
 * Complete calls over SIP (CONTRACT 16, issue 31): the platform with SWITCH=sip and SIPp as the
 * carrier (test/sipp/trunk-uas.xml), each call placed with POST /api/v1/calls, INVITEd at the trunk,
 * answered, bridged (re-INVITEs), hung up by the client once bridged, and its webhook record built.
 * Calls are placed open-loop at a rate raised step by step until one fails. Post-dial delay: from
 * the POST to the customer's INVITE leaving for the trunk (on loopback, its arrival).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import dgram from 'node:dgram';
import net from 'node:net';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { createPlatform } from '../src/platform.js';
import { applyProvisioning } from '../src/commands/provisioning/provision.js';
import type { SipSwitch } from '../src/gateways/switch/sip/sip-switch.js';
import type { SipMessage } from '../src/gateways/switch/sip/message.js';
import type { Peer } from '../src/gateways/switch/sip/transport.js';

export interface SipStep {
  rate: number;
  calls: number;
  failed: number;
  callsPerSecond: number;
  pddP50: number;
  pddP99: number;
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
const now = () => performance.timeOrigin + performance.now();

async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 40_000);
    const ok = await new Promise<boolean>((resolve) => {
      const udp = dgram.createSocket('udp4');
      udp.once('error', () => resolve(false));
      udp.bind(port, '127.0.0.1', () => {
        const tcp = net.createServer();
        tcp.once('error', () => udp.close(() => resolve(false)));
        tcp.listen(port, '127.0.0.1', () => tcp.close(() => udp.close(() => resolve(true))));
      });
    });
    if (ok) return port;
  }
}

export async function benchSip(options: { rates?: number[]; seconds?: number } = {}): Promise<{ steps: SipStep[]; best: SipStep | null }> {
  if (!existsSync('/usr/bin/sipp')) throw new Error('sipp is not installed (Debian package sip-tester)');
  const rates = options.rates ?? [50, 100, 200, 300, 400];
  const seconds = options.seconds ?? 3;
  const trunkPort = await freePort();
  const trunk = spawn('/usr/bin/sipp', ['-sf', path.resolve(import.meta.dirname, '../../test/sipp/trunk-uas.xml'), '-i', '127.0.0.1', '-p', String(trunkPort), '-t', 'u1', '-cp', String(await freePort()), '-mp', String(await freePort()), '-nostdin', '-max_socket', '10000'], { stdio: 'ignore' });
  const dataDir = mkdtempSync(path.join(tmpdir(), 'ct-bench-sip-'));
  const config = loadConfig({
    EMBEDDED_THREADS: process.env.EMBEDDED_THREADS,
    PORT: '0',
    SOCKET_PORT: '0',
    DATA_DIR: dataDir,
    OPERATOR_TOKEN: 'bench',
    RATE_LIMIT_RPS: '0',
    LOG_LEVEL: 'silent',
    SWITCH: 'sip',
    SIP_HOST: '127.0.0.1',
    SIP_PORT: String(await freePort()),
    SIP_TRUNK: `127.0.0.1:${trunkPort}`,
    SIP_RING_TIMEOUT_MS: '10000',
  });
  const platform = await createPlatform(config, { logger: pino({ level: 'silent' }) });
  try {
    const { httpUrl } = await platform.start();
    const agents = Array.from({ length: 100 }, (_, i) => ({ id: 6000 + i, name: `Agent ${i}`, number: `91666${String(i).padStart(5, '3')}`, sip: `s${i}` }));
    const prov = await applyProvisioning(platform.ctx.events, {
      services: [{ id: 1, name: 'Bench', customer: 'bench', timezone: 'UTC', dids: ['8000000001'], agents }],
      users: [{ id: 1, username: 'bench', password: 'bench-password', admin: true, services: [1] }],
    });
    await platform.ctx.sync.waitFor(prov.position);
    const authorization = `Basic ${Buffer.from('bench:bench-password').toString('base64')}`;
    for (const a of agents) {
      const res = await fetch(`${httpUrl}/api/v1/agents?status=0&agent-number=${a.number}`, { method: 'PATCH', headers: { authorization } });
      if (res.status !== 200) throw new Error(`agent login failed: ${res.status}`);
    }
    // The INVITEs leaving for the trunk, by the number dialled (bench only: the switch is the call flow's).
    const sw = (platform.callFlow as unknown as { sw: SipSwitch }).sw;
    const inviteAt = new Map<string, number>();
    const transport = sw.transport;
    const send = transport.send.bind(transport);
    transport.send = (m: SipMessage, to: Peer) => {
      if (m.kind === 'request' && m.method === 'INVITE' && !/;\s*tag=/.test(m.headers.find(([n]) => n === 'to')?.[1] ?? '')) {
        const user = /^sip:([^@]+)@/.exec(m.uri)?.[1];
        if (user && !inviteAt.has(user)) inviteAt.set(user, now());
      }
      send(m, to);
    };
    const ended = new Map<string, boolean>();
    const sub = platform.ctx.events.subscribeToAll({ after: await platform.ctx.events.headPosition() });
    const watching = (async () => {
      for await (const e of sub) {
        if (e.type === 'CallBridged') {
          const xnid = (e.data as { xnid: string }).xnid;
          void fetch(`${httpUrl}/api/v1/calls/${xnid}`, { method: 'POST', headers: { authorization, 'content-type': 'application/x-www-form-urlencoded' }, body: 'signal=hangup' }).then((r) => r.arrayBuffer());
        } else if (e.type === 'CallEnded') {
          const d = e.data as { xnid: string; disposition: string; webhook?: unknown };
          ended.set(d.xnid, d.disposition === 'answered' && d.webhook !== undefined);
        }
      }
    })();
    let seq = 0;
    const step = async (rate: number, secs: number): Promise<SipStep> => {
      const total = Math.round(rate * secs);
      const placed: Array<{ number: string; at: number; id: Promise<string | null> }> = [];
      const t0 = now();
      while (placed.length < total) {
        const due = Math.min(total, Math.floor(((now() - t0) / 1000) * rate) + 1);
        while (placed.length < due) {
          const number = `98${String(++seq).padStart(7, '0')}5`;
          const at = now();
          const id = fetch(`${httpUrl}/api/v1/calls`, { method: 'POST', headers: { authorization, 'content-type': 'application/x-www-form-urlencoded' }, body: `number=${number}` })
            .then(async (r) => (r.status === 200 ? ((await r.json()) as { id: string }).id : null))
            .catch(() => null);
          placed.push({ number, at, id });
        }
        await new Promise((r) => setTimeout(r, 2));
      }
      const ids = await Promise.all(placed.map((p) => p.id));
      const deadline = now() + 15_000;
      while (now() < deadline && !ids.every((id) => id !== null && ended.has(id))) await new Promise((r) => setTimeout(r, 20));
      const elapsed = (now() - t0) / 1000;
      const failed = ids.filter((id) => id === null || ended.get(id) !== true).length;
      const pdd = placed.map((p) => (inviteAt.get(p.number) ?? Infinity) - p.at).sort((a, b) => a - b);
      return { rate, calls: total, failed, callsPerSecond: (total - failed) / elapsed, pddP50: quantile(pdd, 0.5), pddP99: quantile(pdd, 0.99) };
    };
    await step(20, 2); // warm-up: the JIT, the stores' first pages
    const steps: SipStep[] = [];
    for (const rate of rates) {
      const s = await step(rate, seconds);
      steps.push(s);
      if (s.failed > 0) break;
    }
    sub.close();
    await watching;
    // The step without a failed call that completed the most calls a second.
    const best = steps.filter((s) => s.failed === 0).sort((a, b) => b.callsPerSecond - a.callsPerSecond)[0] ?? null;
    return { steps, best };
  } finally {
    await platform.stop();
    trunk.kill('SIGTERM');
    rmSync(dataDir, { recursive: true, force: true });
  }
}
