/**
 * The README's examples work as printed, in order: every `sh` block between the walkthrough markers
 * runs in one bash, against a fresh server, with curl failing on any 4xx/5xx. Blocks that start with
 * `# another terminal` (long-running clients) or `# with the server stopped` (replay) are left out.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATOR_TOKEN, startServer, type TestServer } from '../support/server.js';
import { buildOnce, root, type Build } from '../support/build.js';

const START = '<!-- walkthrough: start -->';
const END = '<!-- walkthrough: end -->';

export function walkthrough(readme: string): string[] {
  const from = readme.indexOf(START);
  const to = readme.indexOf(END);
  if (from < 0 || to < from) throw new Error('README has no walkthrough markers');
  const blocks: string[] = [];
  const re = /^([ \t]*)```sh\n([\s\S]*?)^\1```/gm;
  for (const m of readme.slice(from, to).matchAll(re)) {
    const indent = m[1]!;
    const code = m[2]!.split('\n').map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l)).join('\n');
    if (!code.startsWith('# another terminal') && !code.startsWith('# with the server stopped')) blocks.push(code);
  }
  return blocks;
}

describe('the README walkthrough', () => {
  let s: TestServer;
  let build: Build;
  beforeAll(async () => {
    build = buildOnce('ct-readme-');
    s = await startServer({ SIM_ANSWER_MS: '50' });
  }, 120_000);
  afterAll(async () => {
    await s?.stop();
    build?.remove();
  });

  it('runs every example in order against a fresh server', async () => {
    const blocks = walkthrough(readFileSync(path.join(root, 'README.md'), 'utf8'));
    expect(blocks.length).toBeGreaterThan(5);
    const port = new URL(s.url).port;
    const script = [
      'set -euo pipefail',
      // Any HTTP error stops the walkthrough, with the answer shown.
      'curl() { command curl --fail-with-body -sS "$@"; echo; }',
      `npx() { if [ "$1" = telephony ]; then shift; node ${JSON.stringify(path.join(build.out, 'src/cli/telephony.js'))} "$@"; else command npx "$@"; fi; }`,
      ...blocks.map((b, i) => `echo "--- block ${i + 1}" >&2\n${b}`),
    ]
      .join('\n')
      .replaceAll('http://127.0.0.1:8080', s.url)
      .replaceAll('127.0.0.1 8989', `127.0.0.1 ${port}`);
    // Asynchronously: the server runs in this process.
    const child = spawn('bash', ['-c', script], {
      cwd: root,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, OPERATOR_TOKEN, DATA_DIR: s.dataDir, LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const r = { stdout: '', stderr: '', status: null as number | null };
    child.stdout.on('data', (b) => (r.stdout += b));
    child.stderr.on('data', (b) => (r.stderr += b));
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    r.status = await new Promise<number | null>((resolve) => child.on('close', resolve));
    clearTimeout(timer);
    expect(r.status, `${r.stderr}\n${r.stdout}`).toBe(0);
  }, 120_000);
});
