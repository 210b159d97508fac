/**
 * vitest globalSetup: names the run for its one shared build of the platform (test/support/build.ts,
 * compiled when a test file first asks for it) and removes that build at the end.
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { runBuildDir } from './build.js';

export default function setup() {
  // Set before the workers start: they inherit it.
  const runId = (process.env.CT_TEST_RUN_ID ??= randomUUID().slice(0, 12));
  return () => rmSync(runBuildDir(runId), { recursive: true, force: true });
}
