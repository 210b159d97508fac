/** `telephony replay`: rebuild every read model from the event log (CONTRACT section 12). */
import { loadConfig } from '../../config.js';
import { replayCommand } from '../analytics.js';
import { UsageError, parseArgs, type CliCommand } from '../command.js';

export const replayCommandEntry: CliCommand = {
  name: 'replay',
  summary: 'rebuild every read model from the event log (stop the server first)',
  usage: 'telephony replay',
  help: `Rebuilds every read model from the event log of the stores the environment names, into fresh
storage, and only then replaces the old ones: a replay that fails or is interrupted leaves the old
read models in place. Stop the server first.

Progress (events, events/s, ETA) on stderr: a bar on a terminal, a plain line a second otherwise.
Ends with the line "replayed <N> events in <S> s" on stdout.
Exit codes: 0 replayed; 1 the replay failed (the reason on stderr); 2 bad usage.`,
  async run(args, io) {
    const { positional } = parseArgs(args);
    if (positional.length !== 0) throw new UsageError('replay takes no arguments');
    return replayCommand(loadConfig(io.env));
  },
};
