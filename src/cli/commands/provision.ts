/** `telephony provision FILE`: apply a provisioning document (CONTRACT section 3) to the stores of the settings. */
import { readFile } from 'node:fs/promises';
import { loadConfig } from '../../config.js';
import { openEventStore } from '../../platform.js';
import { applyProvisioning } from '../../commands/provisioning/provision.js';
import { AppError } from '../../domain/errors.js';
import { UsageError, parseArgs, type CliCommand } from '../command.js';
import { progress } from '../progress.js';

export const provisionCommand: CliCommand = {
  name: 'provision',
  summary: 'apply a provisioning document (CONTRACT section 3), idempotently',
  usage: 'telephony provision FILE',
  help: `Applies the provisioning document FILE (JSON: services, agents, customers, users) to the
event log of the stores the environment names (DATA_DIR, or EVENTSTORE_URL). Applying it again
changes nothing; records it no longer lists are left alone. A running server picks the changes up.

Prints {"services", "agents", "users", "appended"} on stdout. Progress on stderr when it is a terminal.
Exit codes: 0 applied; 1 the document was refused (the reason on stderr); 2 bad usage or unreadable FILE.`,
  async run(args, io) {
    const { positional } = parseArgs(args);
    if (positional.length !== 1) throw new UsageError('provision takes exactly one FILE');
    const file = positional[0]!;
    const config = loadConfig(io.env);
    let doc: unknown;
    try {
      doc = JSON.parse(await readFile(file, 'utf8'));
    } catch (err) {
      io.stderr.write(`cannot read ${file}: ${(err as Error).message}\n`);
      return 2;
    }
    // Appends go to the event log only; a running server's projector picks them up.
    const events = await openEventStore(config, Date.now);
    const bar = progress('provisioning', 0, io.stderr, { unit: 'records' });
    try {
      const r = await applyProvisioning(events, doc, (done, total) => bar.update(done, total));
      bar.stop();
      io.stdout.write(`${JSON.stringify({ services: r.services, agents: r.agents, users: r.users, appended: r.appended })}\n`);
      return 0;
    } catch (err) {
      bar.stop();
      if (err instanceof AppError) {
        io.stderr.write(`provisioning refused: ${err.message}\n`);
        return 1;
      }
      throw err;
    } finally {
      await events.close();
    }
  },
};
