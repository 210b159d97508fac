/**
 * Starting the platform as a newcomer does: a bad setting is one line and exit code 2 (no stack
 * trace); the generated operator token reaches a terminal only, never a pipe or a log; the CLI's
 * help and exit codes as a real process.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOnce, type Build } from '../support/build.js';
import { until } from '../support/until.js';

let build: Build;
beforeAll(() => {
  build = buildOnce('ct-startup-');
}, 120_000);
afterAll(() => build?.remove());

const baseEnv = () => ({ PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: mkdtempSync(path.join(build.work, 'data-')), PORT: '0', SOCKET_PORT: '0' });
const main = () => path.join(build.out, 'src/main.js');

/** Runs until `ready` matches the output (stdout+stderr) or the deadline; then stops the whole process group. */
async function runUntil(command: string, args: string[], env: Record<string, string | undefined>, ready: RegExp, whileRunning?: (output: string) => Promise<void>) {
  const child: ChildProcess = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  child.stdout!.on('data', (b) => (output += b));
  child.stderr!.on('data', (b) => (output += b));
  try {
    await until(() => ready.test(output) || child.exitCode !== null, `${ready} in the output`, 20_000);
    expect(child.exitCode, output).toBeNull();
    await whileRunning?.(output);
  } finally {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      process.kill(-child.pid!, 'SIGTERM');
      await exited;
    }
  }
  return output;
}

describe('a bad setting', () => {
  it.each([
    [{ PORT: 'eighty' }, /^cloud-telephony: PORT must be a non-negative integer, got "eighty"$/],
    [{ LOG_LEVEL: 'loud' }, /^cloud-telephony: LOG_LEVEL must be one of/],
    [{ REDIS_URL: 'localhost:6379' }, /^cloud-telephony: REDIS_URL is not a connection string its driver takes \(must be redis:\/\//],
    [{ EVENTSTORE_URL: 'kurrentdb://admin:hunter2@db:2113,db2:x' }, /^cloud-telephony: EVENTSTORE_URL is not a connection string its driver takes \(.*port number\), got "kurrentdb:\/\/admin:\*\*\*@db:2113,db2:x"$/],
    [{ MONGODB_URL: 'mongodb://' }, /^cloud-telephony: MONGODB_URL is not a connection string its driver takes/],
    // A worker host of a split deployment on a server event store: the file lease would be its own.
    [{ ROLES: 'worker', EVENTSTORE_URL: 'kurrentdb://127.0.0.1:1?tls=false' }, /^cloud-telephony: ROLES=worker with EVENTSTORE_URL needs a worker lease all hosts share: set REDIS_URL/],
    [{ PROVISION_FILE: '/nonexistent/provisioning.json' }, /^cloud-telephony: PROVISION_FILE \/nonexistent\/provisioning\.json: ENOENT/],
  ])('%o is one line on stderr and exit code 2', (env, line) => {
    const r = spawnSync(process.execPath, [main()], { env: { ...baseEnv(), OPERATOR_TOKEN: 't', ...env }, encoding: 'utf8', timeout: 30_000 });
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(line);
  });

  it('a port in use is one line naming PORT', async () => {
    const net = await import('node:net');
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    try {
      const r = spawnSync(process.execPath, [main()], { env: { ...baseEnv(), OPERATOR_TOKEN: 't', PORT: String(port), LOG_LEVEL: 'silent' }, encoding: 'utf8', timeout: 30_000 });
      expect(r.status).toBe(2);
      expect(r.stderr.trimEnd().split('\n')).toEqual([`cloud-telephony: 127.0.0.1:${port} is already in use: stop what runs there or set PORT / SOCKET_PORT`]);
    } finally {
      blocker.close();
    }
  });
});

describe('the generated operator token', () => {
  it('is not written when stdout is not a terminal: the log says it was generated, without it', async () => {
    const out = await runUntil(process.execPath, [main()], baseEnv(), /cloud-telephony started/);
    const lines = out.trimEnd().split('\n');
    for (const l of lines) expect(() => JSON.parse(l), l).not.toThrow();
    const notice = lines.map((l) => JSON.parse(l)).find((l) => /operator token generated/.test(l.msg));
    expect(notice).toBeDefined();
    expect(notice.msg).toMatch(/set OPERATOR_TOKEN to choose one/);
    expect(out).not.toContain('OPERATOR_TOKEN (generated');
    // The token is 32 base64url characters; nothing of that shape is in the output.
    expect(out).not.toMatch(/(^|[^A-Za-z0-9_-])[A-Za-z0-9_-]{32}([^A-Za-z0-9_-]|$)/);
  }, 40_000);

  it('is printed once on a terminal, and it opens the operator API', async () => {
    // script(1) gives the server a pseudo-terminal as stdout.
    const env = { ...baseEnv(), LOG_LEVEL: 'info' };
    let status = 0;
    const out = await runUntil('script', ['-qefc', `${process.execPath} ${main()}`, '/dev/null'], env, /cloud-telephony started/, async (output) => {
      const token = /OPERATOR_TOKEN \(generated for this run; set OPERATOR_TOKEN to choose one\): ([A-Za-z0-9_-]{32})/.exec(output)?.[1];
      const url = /"httpUrl":"(http:[^"]+)"/.exec(output)?.[1];
      expect(token, output).toBeDefined();
      status = (await fetch(`${url}/ops/v1/simulator/sms`, { headers: { authorization: `Bearer ${token}` } })).status;
    });
    expect(status).toBe(200);
    const token = /choose one\): ([A-Za-z0-9_-]{32})/.exec(out)![1]!;
    expect(out.split(token).length - 1).toBe(1);
  }, 40_000);
});

describe('the telephony binary', () => {
  const cli = (args: string[]) =>
    spawnSync(process.execPath, [path.join(build.out, 'src/cli/telephony.js'), ...args], { env: { ...baseEnv(), LOG_LEVEL: 'silent' }, encoding: 'utf8', timeout: 30_000 });
  it('--help and COMMAND --help on stdout with exit 0; an unknown command exits 2 with one line', () => {
    const help = cli(['--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('provision');
    const one = cli(['provision', '--help']);
    expect(one.status).toBe(0);
    expect(one.stdout).toContain('usage: telephony provision FILE');
    const unknown = cli(['frobnicate']);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr.trimEnd().split('\n')).toHaveLength(1);
  });
});
