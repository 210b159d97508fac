#!/usr/bin/env node
/** The operator CLI (`telephony`); see src/cli/cli.ts. Works on the same DATA_DIR / stores as the server. */
import { runCli } from './cli.js';

process.exitCode = await runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env });
