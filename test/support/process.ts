/**
 * The platform as real child processes (`node build/src/main.js`) for fault tests: built once into
 * a temporary directory, each process's JSON log parsed line by line, kill -9 and SIGTERM for real.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { OPERATOR_TOKEN } from './server.js';

const root = path.resolve(import.meta.dirname, '../..');

export interface Build {
  dir: string;
  /** A fresh directory under the build's temporary directory. */
  tempDir(prefix: string): string;
  writeJson(value: unknown): string;
  remove(): void;
}

/** Compiles the project once (tsc) into a temporary directory the child processes run from. */
export function buildOnce(): Build {
  const dir = mkdtempSync(path.join(tmpdir(), 'ct-proc-'));
  const out = path.join(dir, 'build');
  const tsc = spawnSync(path.join(root, 'node_modules/.bin/tsc'), ['-p', path.join(root, 'tsconfig.build.json'), '--outDir', out], { encoding: 'utf8' });
  if (tsc.status !== 0) throw new Error(`build failed: ${tsc.stdout}${tsc.stderr}`);
  symlinkSync(realpathSync(path.join(root, 'node_modules')), path.join(dir, 'node_modules'), 'dir');
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  return {
    dir,
    tempDir: (prefix) => mkdtempSync(path.join(dir, prefix)),
    writeJson(value) {
      const file = path.join(mkdtempSync(path.join(dir, 'json-')), 'doc.json');
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

export class ServerProcess {
  readonly lines: LogLine[] = [];
  readonly raw: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  url = '';
  socketPort = 0;
  private listeners: Array<() => void> = [];

  private constructor(readonly proc: ChildProcess) {
    createInterface({ input: proc.stdout! }).on('line', (raw) => {
      this.raw.push(raw);
      try {
        this.lines.push(JSON.parse(raw) as LogLine);
      } catch {
        this.lines.push({ msg: raw });
      }
      for (const l of this.listeners) l();
    });
    createInterface({ input: proc.stderr! }).on('line', (raw) => {
      this.raw.push(raw);
      this.lines.push({ msg: `stderr: ${raw}` });
      for (const l of this.listeners) l();
    });
    this.exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
    void this.exited.then(() => this.listeners.forEach((l) => l()));
  }

  /** Spawns the server; resolves once it logged that it started (or rejects when it exits first). */
  static async start(build: Build, dataDir: string, env: Record<string, string> = {}, options: { waitStarted?: boolean } = {}): Promise<ServerProcess> {
    const proc = spawn(process.execPath, [path.join(build.dir, 'build/src/main.js')], {
      env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: '0', SOCKET_PORT: '0', DATA_DIR: dataDir, OPERATOR_TOKEN, RATE_LIMIT_RPS: '0', LOG_LEVEL: 'info', WEBHOOK_ALLOW_PRIVATE: 'true', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const server = new ServerProcess(proc);
    if (options.waitStarted === false) return server;
    const started = await server.waitForLine((l) => l.msg === 'cloud-telephony started', 60_000);
    server.url = started.httpUrl as string;
    const sock = server.lines.find((l) => l.msg === 'event socket listening');
    if (sock) server.socketPort = sock.port as number;
    return server;
  }

  waitForLine(match: (l: LogLine) => boolean, timeoutMs = 15_000): Promise<LogLine> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.lines.find(match);
        if (found) {
          done();
          resolve(found);
        } else if (this.proc.exitCode !== null || this.proc.signalCode !== null) {
          done();
          reject(new Error(`server exited before the awaited log line; log:\n${this.log()}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`no such log line within ${timeoutMs} ms; log:\n${this.log()}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.listeners = this.listeners.filter((l) => l !== check);
      };
      this.listeners.push(check);
      check();
    });
  }

  log(last = 40) {
    return this.raw.slice(-last).join('\n');
  }

  fetch(p: string, init: RequestInit = {}) {
    return fetch(this.url + p, init);
  }

  async kill9() {
    this.proc.kill('SIGKILL');
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
