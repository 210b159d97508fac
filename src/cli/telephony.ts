#!/usr/bin/env node
/** The operator CLI: `telephony provision FILE`. Works on the same DATA_DIR / stores as the server. */
import { readFile } from 'node:fs/promises';
import { loadConfig } from '../config.js';
import { openEventStore } from '../platform.js';
import { applyProvisioning } from '../commands/provisioning/provision.js';
import { AppError } from '../domain/errors.js';
import { exportCommand, replayCommand, UsageError } from './analytics.js';

const USAGE = `usage: telephony provision FILE   apply a provisioning document (CONTRACT section 3), idempotently
       telephony replay           rebuild every read model from the event log (stop the server first)
       telephony export calls --svc ID [--from T] [--to T] [--format json|jsonl|csv|xlsx] [--out FILE]
                                  ended calls that began in [from, to) (T: epoch ms or ISO 8601)`;

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  if (command === 'provision' && args.length === 1) {
    const config = loadConfig();
    let doc: unknown;
    try {
      doc = JSON.parse(await readFile(args[0]!, 'utf8'));
    } catch (err) {
      process.stderr.write(`cannot read ${args[0]}: ${(err as Error).message}\n`);
      return 2;
    }
    // Appends go to the event log only; a running server's projector picks them up.
    const events = await openEventStore(config, Date.now);
    try {
      const r = await applyProvisioning(events, doc);
      process.stdout.write(`${JSON.stringify({ services: r.services, agents: r.agents, users: r.users, appended: r.appended })}\n`);
      return 0;
    } catch (err) {
      if (err instanceof AppError) {
        process.stderr.write(`provisioning refused: ${err.message}\n`);
        return 1;
      }
      throw err;
    } finally {
      await events.close();
    }
  }
  if (command === 'replay' && args.length === 0) return replayCommand(loadConfig());
  if (command === 'export' && args[0] === 'calls') {
    try {
      return await exportCommand(loadConfig(), args.slice(1));
    } catch (err) {
      if (err instanceof UsageError || err instanceof AppError) {
        process.stderr.write(`telephony export calls: ${err.message}\n`);
        return 2;
      }
      throw err;
    }
  }
  process.stderr.write(`${USAGE}\n`);
  return command === undefined || command === '--help' || command === 'help' ? 0 : 2;
}

process.exitCode = await main(process.argv.slice(2));
