/**
 * The operator CLI's dispatch. Commands live in a table (src/cli/commands/*.ts); `telephony --help`
 * lists them, `telephony COMMAND --help` explains one, an unknown command exits 2 with one line.
 */
import { ConfigError } from '../config.js';
import { UsageError, isHelp, type CliCommand, type CliIo } from './command.js';
import { provisionCommand } from './commands/provision.js';
import { replayCommandEntry } from './commands/replay.js';
import { exportCommandEntry } from './commands/export.js';

/** Every command; a new one adds itself here. */
export const commands: CliCommand[] = [provisionCommand, replayCommandEntry, exportCommandEntry];

export function overview(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    'usage: telephony COMMAND [ARGS]',
    '',
    'commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    "Run 'telephony COMMAND --help' for a command's arguments. Settings come from the environment",
    '(DATA_DIR, EVENTSTORE_URL, MONGODB_URL, REDIS_URL, ...), as for the server.',
  ].join('\n');
}

function commandHelp(c: CliCommand): string {
  return `usage: ${c.usage}\n\n${c.summary}\n\n${c.help}`;
}

export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined) {
    io.stderr.write(`${overview()}\n`);
    return 2;
  }
  if (isHelp(name)) {
    const about = args[0] === undefined ? undefined : commands.find((c) => c.name === args[0]);
    io.stdout.write(`${about ? commandHelp(about) : overview()}\n`);
    return 0;
  }
  const command = commands.find((c) => c.name === name);
  if (!command) {
    io.stderr.write(`telephony: unknown command "${name}" (commands: ${commands.map((c) => c.name).join(', ')}; see telephony --help)\n`);
    return 2;
  }
  if (args.some((a) => a === '--help' || a === '-h')) {
    io.stdout.write(`${commandHelp(command)}\n`);
    return 0;
  }
  try {
    return await command.run(args, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(`telephony ${command.name}: ${err.message} (usage: ${command.usage})\n`);
      return 2;
    }
    if (err instanceof ConfigError) {
      io.stderr.write(`telephony: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
}
