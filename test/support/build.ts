/** The compiled platform in a temporary directory, for tests that run it as a real process (`node build/src/main.js`). */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const root = path.resolve(import.meta.dirname, '../..');

export interface Build {
  work: string;
  out: string;
  remove(): void;
}

/** Compiles the project into `dir/build`, resolving packages from the project's node_modules as ES modules. */
function compile(dir: string): void {
  const out = path.join(dir, 'build');
  const tsc = spawnSync(path.join(root, 'node_modules/.bin/tsc'), ['-p', path.join(root, 'tsconfig.build.json'), '--outDir', out], { encoding: 'utf8' });
  if (tsc.status !== 0) throw new Error(`build failed: ${tsc.stdout}${tsc.stderr}`);
  symlinkSync(realpathSync(path.join(root, 'node_modules')), path.join(dir, 'node_modules'), 'dir');
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
}

/** The run's directory for its one build (build-global.ts names the run and removes it at the end). */
export const runBuildDir = (runId: string) => path.join(tmpdir(), `ct-build-run-${runId}`);

const sleepSync = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * The run's build, compiled by the first test file that asks (the others wait for it): one tsc per
 * run instead of one per file. Null outside a vitest run with build-global.ts.
 */
function sharedBuild(): string | null {
  const runId = process.env.CT_TEST_RUN_ID;
  if (!runId) return null;
  const dir = runBuildDir(runId);
  const done = path.join(dir, 'done');
  const failed = path.join(dir, 'failed');
  try {
    mkdirSync(dir);
  } catch {
    // Another file builds it: wait for its outcome (tsc takes seconds; generous on a loaded machine).
    const deadline = Date.now() + 300_000;
    while (!existsSync(done)) {
      if (existsSync(failed)) throw new Error(readFileSync(failed, 'utf8'));
      if (Date.now() > deadline) throw new Error(`the run's build in ${dir} did not finish`);
      sleepSync(100);
    }
    return path.join(dir, 'build');
  }
  try {
    compile(dir);
  } catch (err) {
    writeFileSync(failed, (err as Error).message);
    throw err;
  }
  writeFileSync(done, '');
  return path.join(dir, 'build');
}

/**
 * A fresh directory whose `build` is the compiled platform (the run's shared build, linked, or one
 * compiled for it): tests write their scripts and data beside it, and remove only their directory.
 */
export function buildOnce(prefix = 'ct-build-'): Build {
  const work = mkdtempSync(path.join(tmpdir(), prefix));
  const out = path.join(work, 'build');
  const shared = sharedBuild();
  if (shared) {
    symlinkSync(shared, out, 'dir');
    symlinkSync(realpathSync(path.join(root, 'node_modules')), path.join(work, 'node_modules'), 'dir');
    writeFileSync(path.join(work, 'package.json'), JSON.stringify({ type: 'module' }));
  } else {
    compile(work);
  }
  return { work, out, remove: () => rmSync(work, { recursive: true, force: true }) };
}
