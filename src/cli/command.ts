/**
 * The CLI's command table: each command names itself, says how it is used, and runs. telephony.ts
 * dispatches to it and answers `--help` for all of them; a new command is one file added to the table.
 */

export interface CliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  env: Record<string, string | undefined>;
}

export interface CliCommand {
  name: string;
  /** One line for the command list. */
  summary: string;
  /** The usage line(s), without the leading `usage: `. */
  usage: string;
  /** What `telephony NAME --help` prints after the usage: options, what it prints, exit codes. */
  help: string;
  /** Runs with the arguments after the command name; resolves to the exit code. */
  run(args: string[], io: CliIo): Promise<number>;
}

/** A mistake in how the command was called: one line on stderr, exit code 2. */
export class UsageError extends Error {}

export interface ParsedArgs {
  /** `--name value` and `--name=value`; a flag named in `booleans` is `true` without a value. */
  options: Record<string, string | true>;
  positional: string[];
}

/**
 * Reads `--name value`, `--name=value` and positional arguments. Options not in `known` are a
 * UsageError, so a typo is not silently ignored.
 */
export function parseArgs(args: string[], known: { values?: string[]; booleans?: string[] } = {}): ParsedArgs {
  const values = new Set(known.values ?? []);
  const booleans = new Set(known.booleans ?? []);
  const options: Record<string, string | true> = {};
  const positional: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') {
      positional.push(...args.slice(i + 1));
      break;
    }
    if (!arg.startsWith('--') || arg === '--') {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq === -1 ? undefined : eq);
    if (booleans.has(name)) {
      if (eq !== -1) throw new UsageError(`--${name} takes no value`);
      options[name] = true;
    } else if (values.has(name)) {
      const value = eq === -1 ? args[++i] : arg.slice(eq + 1);
      if (value === undefined || value === '') throw new UsageError(`--${name} needs a value`);
      options[name] = value;
    } else {
      throw new UsageError(`unknown option --${name}`);
    }
  }
  return { options, positional };
}

export const isHelp = (arg: string | undefined) => arg === '--help' || arg === '-h' || arg === 'help';
