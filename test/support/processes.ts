/**
 * The platform as separate OS processes: the compiled code (built once per test file into a
 * temporary directory) started as `node build/src/main.js` with its own environment, its JSON log
 * parsed line by line so tests wait on what it says rather than on time.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { OPERATOR_TOKEN } from './server.js';

const root = path.resolve(import.meta.dirname, '../..');

export interface Build {
  dir: string;
  main: string;
  remove(): void;
}

/** Compiles the project into a temporary directory that resolves packages from the project's node_modules. */
export function buildPlatform(): Build {
  const dir = mkdtempSync(path.join(tmpdir(), 'ct-proc-'));
  const out = path.join(dir, 'build');
  const tsc = spawnSync(path.join(root, 'node_modules/.bin/tsc'), ['-p', path.join(root, 'tsconfig.build.json'), '--outDir', out], { encoding: 'utf8' });
  if (tsc.status !== 0) throw new Error(`build failed: ${tsc.stdout}${tsc.stderr}`);
  symlinkSync(realpathSync(path.join(root, 'node_modules')), path.join(dir, 'node_modules'), 'dir');
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  return { dir, main: path.join(out, 'src/main.js'), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface LogLine {
  msg?: string;
  [k: string]: unknown;
}

export class RoleProcess {
  readonly lines: LogLine[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  url = '';
  socketPort = 0;
  private listeners: Array<() => void> = [];

  private constructor(
    readonly name: string,
    readonly proc: ChildProcess,
  ) {
    createInterface({ input: proc.stdout! }).on('line', (raw) => {
      try {
        this.lines.push(JSON.parse(raw) as LogLine);
      } catch {
        this.lines.push({ msg: raw });
      }
      for (const l of this.listeners) l();
    });
    proc.stderr!.on('data', (d) => {
      this.lines.push({ msg: `stderr: ${d}` });
      for (const l of this.listeners) l();
    });
    this.exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
    void this.exited.then(() => this.listeners.forEach((l) => l()));
  }

  /**
   * Spawns the process; with `waitStarted` (default) resolves once it logged that it started.
   * `wrap` runs it under another command (`ip netns exec <ns>`), which execs node in its place.
   */
  static async start(build: Build, name: string, env: Record<string, string>, waitStarted = true, wrap: string[] = []): Promise<RoleProcess> {
    const [cmd, ...args] = [...wrap, process.execPath, build.main];
    const proc = spawn(cmd!, args, {
      env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: '0', SOCKET_PORT: '0', OPERATOR_TOKEN, RATE_LIMIT_RPS: '0', LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const p = new RoleProcess(name, proc);
    if (waitStarted) {
      const started = await p.waitForLine((l) => l.msg === 'cloud-telephony started', 30_000);
      p.url = (started.httpUrl as string | null) ?? '';
      p.socketPort = (started.socketPort as number | null) ?? 0;
    }
    return p;
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

  log() {
    return this.lines.map((l) => JSON.stringify(l)).join('\n');
  }

  /** SIGKILL: no shutdown code runs. */
  async kill9(): Promise<void> {
    this.proc.kill('SIGKILL');
    await this.exited;
  }

  /** SIGTERM, then the exit status. */
  async stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGTERM');
    return this.exited;
  }
}
