/** SIPp (Debian package sip-tester) as the real SIP peer of the SIP switch's tests: carrier, phones, callers. */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import dgram from 'node:dgram';
import net from 'node:net';
import path from 'node:path';
import { until } from './until.js';
import { parseMessage, type SipMessage } from '../../src/gateways/switch/sip/message.js';

export const SIPP = '/usr/bin/sipp';
export const hasSipp = existsSync(SIPP);
export const scenario = (name: string) => path.resolve(import.meta.dirname, '../sipp', name);

/** A port free for both UDP and TCP on 127.0.0.1, away from 5060 and 17100-17199. */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 40_000);
    const udp = dgram.createSocket('udp4');
    const ok = await new Promise<boolean>((resolve) => {
      udp.once('error', () => resolve(false));
      udp.bind(port, '127.0.0.1', () => {
        const tcp = net.createServer();
        tcp.once('error', () => resolve(false));
        tcp.listen(port, '127.0.0.1', () => tcp.close(() => resolve(true)));
      });
    });
    await new Promise<void>((r) => udp.close(() => r()));
    if (ok) return port;
  }
}

export interface Sipp {
  port: number;
  /** What SIPp printed (its screen and errors). */
  output(): string;
  /** Its exit code once it exits: 0 when every call succeeded. */
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

export interface SippOptions {
  scenario: string;
  transport?: 'udp' | 'tcp';
  /** host:port to call (a UAC scenario); absent for a UAS. */
  remote?: string;
  /** Values the scenario reads as [key]. */
  keys?: Record<string, string>;
  args?: string[];
  /** Log every message SIPp sends and receives to this file (read it with sippMessages). */
  messageFile?: string;
}

/** SIPp started; a port taken between freePort() and SIPp's bind (parallel tests) is chosen again. */
export async function startSipp(o: SippOptions): Promise<Sipp> {
  for (let attempt = 1; ; attempt++) {
    const sipp = await startOnce(o);
    if (o.remote || attempt >= 3) return sipp;
    // SIPp exits at once when its port was taken: give it the moment to, then look.
    const early = await Promise.race([sipp.exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 150))]);
    if (!early) return sipp;
  }
}

async function startOnce(o: SippOptions): Promise<Sipp> {
  const port = await freePort();
  const args = [
    '-sf', o.scenario, '-i', '127.0.0.1', '-p', String(port), '-t', o.transport === 'tcp' ? 't1' : 'u1',
    '-cp', String(await freePort()), '-mp', String(await freePort()), '-nostdin',
    ...Object.entries(o.keys ?? {}).flatMap(([k, v]) => ['-key', k, v]),
    ...(o.messageFile ? ['-trace_msg', '-message_file', o.messageFile] : []),
    ...(o.args ?? []),
    ...(o.remote ? [o.remote] : []),
  ];
  let out = '';
  const proc: ChildProcess = spawn(SIPP, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  proc.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  if (!o.remote) {
    // A UAS is ready once it holds its port.
    await until(async () => !(await bindable(port, o.transport ?? 'udp')), `sipp listening on ${port}`, 10_000, 20);
  }
  return {
    port,
    output: () => out,
    exited,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
    },
  };
}

async function bindable(port: number, transport: 'udp' | 'tcp'): Promise<boolean> {
  if (transport === 'tcp') {
    return new Promise((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port }, () => {
        s.destroy();
        resolve(false);
      });
      s.once('error', () => resolve(true));
    });
  }
  const udp = dgram.createSocket('udp4');
  const ok = await new Promise<boolean>((resolve) => {
    udp.once('error', () => resolve(false));
    udp.bind(port, '127.0.0.1', () => resolve(true));
  });
  await new Promise<void>((r) => udp.close(() => r()));
  return ok;
}

/** A scenario file from a template under test/sipp with its placeholders filled in, in a temp dir. */
export function scenarioWith(name: string, values: Record<string, string>): string {
  let text = readFileSync(scenario(name), 'utf8');
  for (const [k, v] of Object.entries(values)) text = text.replaceAll(k, v);
  const dir = mkdtempSync(path.join(tmpdir(), 'ct-sipp-'));
  const file = path.join(dir, name);
  writeFileSync(file, text);
  return file;
}

/** SIPp's exit code with what it printed, for an assertion that shows why a scenario failed. */
export async function outcome(sipp: Sipp): Promise<{ code: number | null; output: string }> {
  const code = await sipp.exited;
  return { code, output: code === 0 ? '' : sipp.output().slice(-4000) };
}

export interface Logged {
  direction: 'received' | 'sent';
  message: SipMessage;
}

/** The messages of a SIPp message log (-trace_msg), parsed, in order. */
export function sippMessages(file: string): Logged[] {
  if (!existsSync(file)) return [];
  const out: Logged[] = [];
  for (const chunk of readFileSync(file, 'latin1').split(/^-{20,} .*$/m)) {
    const m = /^\s*(?:UDP|TCP) message (received|sent) (?:\[\d+\] bytes :|\(\d+ bytes\):)\n\n([\s\S]*)$/.exec(chunk);
    if (!m) continue;
    // The log's line ends and trailing blank lines differ from the wire's: parsed without Content-Length.
    let text = m[2]!.replace(/\r?\n/g, '\r\n').replace(/^(?:Content-Length|l)\s*:.*\r\n/im, '').replace(/(\r\n)+$/, '\r\n');
    if (!text.includes('\r\n\r\n')) text += '\r\n';
    const p = parseMessage(Buffer.from(text, 'latin1'));
    if (p.ok) out.push({ direction: m[1] as Logged['direction'], message: p.message });
  }
  return out;
}

/** A temp file name for a message log. */
export const messageLog = () => path.join(mkdtempSync(path.join(tmpdir(), 'ct-sipp-log-')), 'messages.log');
