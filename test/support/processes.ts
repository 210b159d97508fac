/**
 * The platform as real OS processes (`node build/src/main.js`), one harness for every test that needs
 * them: the project compiled once per test file into a temporary directory, each process started
 * with its own environment, its JSON log parsed line by line so tests wait on what it says rather
 * than on time; kill -9 and SIGTERM for real.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { OPERATOR_TOKEN } from './server.js';
import { buildOnce } from './build.js';


export interface Build {
  dir: string;
  /** The compiled entry point, build/src/main.js. */
  main: string;
  /** The compiled operator CLI, build/src/cli/telephony.js. */
  cli: string;
  /** A fresh directory under the build's temporary directory. */
  tempDir(prefix: string): string;
  /** Writes `value` as JSON to a fresh file under the build's directory; answers its path. */
  writeJson(value: unknown, name?: string): string;
  remove(): void;
}

/** The compiled project (the run's shared build, build.ts) in a temporary directory of its own. */
export function buildPlatform(): Build {
  const { work: dir, out } = buildOnce('ct-proc-');
  return {
    dir,
    main: path.join(out, 'src/main.js'),
    cli: path.join(out, 'src/cli/telephony.js'),
    tempDir: (prefix) => mkdtempSync(path.join(dir, prefix)),
    writeJson(value, name = 'doc.json') {
      const file = path.join(mkdtempSync(path.join(dir, 'json-')), name);
      writeFileSync(file, JSON.stringify(value));
      return file;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A TCP port free right now on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export interface LogLine {
  msg?: string;
  level?: number;
  [k: string]: unknown;
}

export const basic = (u: string, p: string) => ({ authorization: `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}` });
export const ADMIN_AUTH = basic('acme-admin', 's3cret-admin');
export const OPS_AUTH = { authorization: `Bearer ${OPERATOR_TOKEN}` };

export interface StartOptions {
  /** Wait for the "started" log line (default); without it the process is answered at once. */
  waitStarted?: boolean;
  /** The deadline for the "started" line: generous, for a loaded machine. */
  startTimeoutMs?: number;
  /** Runs it under another command (`ip netns exec <ns>`), which execs node in its place. */
  wrap?: string[];
}

export class PlatformProcess {
  readonly lines: LogLine[] = [];
  /** Every line of stdout and stderr as printed. */
  readonly raw: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  url = '';
  socketPort = 0;
  private listeners: Array<() => void> = [];

  private constructor(
    readonly name: string,
    readonly proc: ChildProcess,
  ) {
    const heard = (raw: string, line: LogLine) => {
      this.raw.push(raw);
      this.lines.push(line);
      for (const l of this.listeners) l();
    };
    createInterface({ input: proc.stdout! }).on('line', (raw) => {
      let line: LogLine;
      try {
        line = JSON.parse(raw) as LogLine;
      } catch {
        line = { msg: raw };
      }
      heard(raw, line);
    });
    createInterface({ input: proc.stderr! }).on('line', (raw) => heard(raw, { msg: `stderr: ${raw}` }));
    this.exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
    void this.exited.then(() => this.listeners.forEach((l) => l()));
  }

  /** Spawns a process named `name` (for messages) with `env` over the test defaults; see StartOptions. */
  static async start(build: Build, name: string, env: Record<string, string>, options: StartOptions | boolean = {}): Promise<PlatformProcess> {
    const { waitStarted = true, startTimeoutMs = 60_000, wrap = [] } = typeof options === 'boolean' ? { waitStarted: options } : options;
    const [cmd, ...args] = [...wrap, process.execPath, build.main];
    const proc = spawn(cmd!, args, {
      env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: '0', SOCKET_PORT: '0', OPERATOR_TOKEN, RATE_LIMIT_RPS: '0', LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const p = new PlatformProcess(name, proc);
    if (!waitStarted) return p;
    const started = await p.waitForLine((l) => l.msg === 'cloud-telephony started', startTimeoutMs);
    p.url = (started.httpUrl as string | null) ?? '';
    p.socketPort = (started.socketPort as number | null | undefined) ?? (p.lines.find((l) => l.msg === 'event socket listening')?.port as number | undefined) ?? 0;
    return p;
  }

  /** A whole server on `dataDir` (the fault tests' form): webhooks to private addresses allowed. */
  static onDataDir(build: Build, dataDir: string, env: Record<string, string> = {}, options: StartOptions = {}): Promise<PlatformProcess> {
    return PlatformProcess.start(build, 'server', { DATA_DIR: dataDir, WEBHOOK_ALLOW_PRIVATE: 'true', ...env }, options);
  }

  /** Resolves with the first log line (seen or coming) that matches; fails on exit or after the deadline. */
  waitForLine(match: (l: LogLine) => boolean, timeoutMs = 15_000): Promise<LogLine> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.lines.find(match);
        if (found) {
          done();
          resolve(found);
        } else if (this.proc.exitCode !== null || this.proc.signalCode !== null) {
          done();
          reject(new Error(`${this.name} exited before the awaited log line; log:\n${this.log()}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`${this.name}: no such log line within ${timeoutMs} ms; log:\n${this.log()}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.listeners = this.listeners.filter((l) => l !== check);
      };
      this.listeners.push(check);
      check();
    });
  }

  /** The log as printed: the last `last` lines, all by default. */
  log(last = Infinity): string {
    return this.raw.slice(-last).join('\n');
  }

  fetch(p: string, init: RequestInit = {}) {
    return fetch(this.url + p, init);
  }

  /** SIGKILL: no shutdown code runs. */
  async kill9() {
    this.proc.kill('SIGKILL');
    return this.exited;
  }

  /** SIGTERM, then the exit status. */
  async stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGTERM');
    return this.exited;
  }

  /** Ends the process if it still runs (afterAll). */
  async ensureDead() {
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      this.proc.kill('SIGKILL');
      await this.exited;
    }
  }
}
