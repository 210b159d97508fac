/** The CLI's dispatch (src/cli/cli.ts): help for every command, exit codes, progress only on a terminal. */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { commands, runCli } from '../../../src/cli/cli.js';
import { parseArgs, UsageError } from '../../../src/cli/command.js';
import { progress } from '../../../src/cli/progress.js';

class Capture extends Writable {
  text = '';
  constructor(readonly isTTY = false) {
    super();
  }
  override _write(chunk: Buffer, _enc: string, done: () => void) {
    this.text += chunk.toString();
    done();
  }
}

const work = mkdtempSync(path.join(tmpdir(), 'ct-cli-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

async function run(argv: string[], options: { tty?: boolean; env?: Record<string, string> } = {}) {
  const stdout = new Capture();
  const stderr = new Capture(options.tty ?? false);
  const code = await runCli(argv, { stdout, stderr, env: { LOG_LEVEL: 'silent', DATA_DIR: path.join(work, 'data'), ...options.env } });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

describe('telephony', () => {
  it('--help lists every command on stdout and exits 0', async () => {
    for (const flag of ['--help', '-h', 'help']) {
      const r = await run([flag]);
      expect(r.code, flag).toBe(0);
      expect(r.stderr).toBe('');
      expect(r.stdout).toMatch(/^usage: telephony COMMAND/);
      for (const c of commands) expect(r.stdout).toContain(c.name);
    }
  });

  it('COMMAND --help (and help COMMAND) prints that command\'s usage on stdout, exit 0, for every command', async () => {
    expect(commands.length).toBeGreaterThan(0);
    for (const c of commands) {
      for (const argv of [[c.name, '--help'], [c.name, '-h'], ['help', c.name], [c.name, 'x', '--help']]) {
        const r = await run(argv);
        expect(r.code, argv.join(' ')).toBe(0);
        expect(r.stdout).toContain(`usage: ${c.usage}`);
        expect(r.stdout).toContain(c.help.split('\n')[0]);
        expect(r.stderr).toBe('');
      }
    }
  });

  it('an unknown command exits 2 with one line on stderr; no command shows the usage and exits 2', async () => {
    const r = await run(['frobnicate', '--now']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('unknown command "frobnicate"');
    const none = await run([]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('usage: telephony COMMAND');
  });

  it('bad usage of a command exits 2 with one line naming it', async () => {
    for (const argv of [['provision'], ['provision', 'a.json', 'b.json'], ['provision', '--force', 'a.json']]) {
      const r = await run(argv);
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.stderr.trimEnd().split('\n'), argv.join(' ')).toHaveLength(1);
      expect(r.stderr).toMatch(/^telephony provision: .*\(usage: telephony provision FILE\)/);
    }
  });

  it('a bad setting is one line and exit 2, no stack trace', async () => {
    const file = path.join(work, 'doc.json');
    writeFileSync(file, '{"services": [], "users": []}');
    const r = await run(['provision', file], { env: { LOG_LEVEL: 'chatty' } });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('telephony: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "chatty"\n');
  });

  it('provision shows progress on a terminal only; the result goes to stdout either way', async () => {
    const doc = JSON.parse(readFileSync(path.resolve(import.meta.dirname, '../../../examples/provisioning.json'), 'utf8'));
    const file = path.join(work, 'example.json');
    writeFileSync(file, JSON.stringify(doc));
    const piped = await run(['provision', file], { env: { DATA_DIR: path.join(work, 'd1') } });
    expect(piped.code).toBe(0);
    expect(piped.stderr).toBe('');
    expect(JSON.parse(piped.stdout)).toMatchObject({ services: 1, agents: 1, users: 2 });

    const tty = await run(['provision', file], { tty: true, env: { DATA_DIR: path.join(work, 'd2') } });
    expect(tty.code).toBe(0);
    expect(JSON.parse(tty.stdout)).toMatchObject({ services: 1, agents: 1, users: 2 });
    // services + agents + customers + users of the example document
    const records = 1 + 1 + doc.services[0].customers.length + 2;
    expect(tty.stderr).toContain('provisioning');
    expect(tty.stderr).toContain(`${records}/${records} records`);
  });
});

describe('progress', () => {
  it('draws on a terminal and stays silent otherwise', () => {
    const tty = new Capture(true);
    const bar = progress('replaying', 10, tty, { unit: 'events' });
    bar.update(4);
    bar.increment(6);
    bar.stop();
    expect(tty.text).toContain('10/10 events');
    const pipe = new Capture(false);
    const quiet = progress('replaying', 10, pipe);
    quiet.update(5);
    quiet.stop();
    expect(pipe.text).toBe('');
  });
});

describe('parseArgs', () => {
  it('reads --name value, --name=value, flags and positionals; refuses unknown options', () => {
    expect(parseArgs(['calls', '--svc', '101', '--format=csv', '--all', 'x'], { values: ['svc', 'format'], booleans: ['all'] })).toEqual({
      options: { svc: '101', format: 'csv', all: true },
      positional: ['calls', 'x'],
    });
    expect(() => parseArgs(['--svc'], { values: ['svc'] })).toThrow(UsageError);
    expect(() => parseArgs(['--nope'])).toThrow('unknown option --nope');
    expect(() => parseArgs(['--all=1'], { booleans: ['all'] })).toThrow(UsageError);
    expect(parseArgs(['--', '--svc'])).toEqual({ options: {}, positional: ['--svc'] });
  });
});
