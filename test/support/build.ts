/** The compiled platform in a temporary directory, for tests that run it as a real process (`node build/src/main.js`). */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const root = path.resolve(import.meta.dirname, '../..');

export interface Build {
  work: string;
  out: string;
  remove(): void;
}

export function buildOnce(prefix = 'ct-build-'): Build {
  const work = mkdtempSync(path.join(tmpdir(), prefix));
  const out = path.join(work, 'build');
  const tsc = spawnSync(path.join(root, 'node_modules/.bin/tsc'), ['-p', path.join(root, 'tsconfig.build.json'), '--outDir', out], { encoding: 'utf8' });
  if (tsc.status !== 0) throw new Error(`build failed: ${tsc.stdout}${tsc.stderr}`);
  // The built files resolve packages from the project's node_modules and are ES modules.
  symlinkSync(realpathSync(path.join(root, 'node_modules')), path.join(work, 'node_modules'), 'dir');
  writeFileSync(path.join(work, 'package.json'), JSON.stringify({ type: 'module' }));
  return { work, out, remove: () => rmSync(work, { recursive: true, force: true }) };
}
