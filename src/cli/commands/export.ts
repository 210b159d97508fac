/** `telephony export calls`: a service's ended calls in a period, as the HTTP export writes them (CONTRACT section 12). */
import { loadConfig } from '../../config.js';
import { AppError } from '../../domain/errors.js';
import { exportCommand } from '../analytics.js';
import { UsageError, type CliCommand } from '../command.js';

export const exportCommandEntry: CliCommand = {
  name: 'export',
  summary: 'export a service\'s ended calls (json, jsonl, csv or xlsx)',
  usage: 'telephony export calls --svc ID [--from T] [--to T] [--format json|jsonl|csv|xlsx] [--out FILE]',
  help: `Writes the ended calls of service ID that began in [from, to) (T: epoch ms or an ISO 8601
date/time; default the 24 hours before now; at most 92 days), oldest first, with the same rows and
formats as GET /api/v1/calls. Works whether the server runs or not (same DATA_DIR).

Writes to FILE, or to stdout without --out. Progress on stderr when it is a terminal.
Exit codes: 0 written; 2 bad usage or a bad range.`,
  async run(args, io) {
    if (args[0] !== 'calls') throw new UsageError('export what? (telephony export calls ...)');
    try {
      return await exportCommand(loadConfig(io.env), args.slice(1));
    } catch (err) {
      // A bad range is the caller's mistake: the same one-line usage error as a bad option.
      if (err instanceof AppError) throw new UsageError(err.message);
      throw err;
    }
  },
};
