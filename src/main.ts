/** Entry point: read config, build adapters, start the roles, stop gracefully on SIGTERM/SIGINT. */
import { ConfigError, loadConfig, type Config } from './config.js';
import { createLogger, createPlatform, type Platform } from './platform.js';
import { startupProblem } from './startup.js';

/** A setting that cannot work is one line on stderr and exit code 2: no stack trace. */
function fail(message: string): never {
  process.stderr.write(`cloud-telephony: ${message}\n`);
  process.exit(2);
}

let config: Config;
try {
  config = loadConfig();
} catch (err) {
  if (err instanceof ConfigError) fail(err.message);
  throw err;
}
const logger = createLogger(config);
let platform: Platform;
let httpUrl: string | null;
let socketPort: number | null;
try {
  platform = await createPlatform(config, { logger });
  ({ httpUrl, socketPort } = await platform.start());
} catch (err) {
  const problem = startupProblem(err, config);
  if (problem) fail(problem);
  throw err;
}
if (config.operatorTokenGenerated) {
  if (process.stdout.isTTY) {
    // Printed once, to the terminal only: it is the key to the operator API for this run.
    process.stdout.write(`OPERATOR_TOKEN (generated for this run; set OPERATOR_TOKEN to choose one): ${config.operatorToken}\n`);
  } else {
    // Not a terminal (a service manager, a pipe to a log): the token stays out of the output.
    logger.warn('operator token generated, set OPERATOR_TOKEN to choose one (it is printed only when stdout is a terminal)');
  }
}
logger.info({ httpUrl, socketPort, roles: [...config.roles], dataDir: config.dataDir }, 'cloud-telephony started');

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      logger.error('shutdown took over 15 s; exiting');
      process.exit(1);
    }, 15_000);
    force.unref();
    platform.stop().then(
      () => process.exit(0),
      (err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  });
}
