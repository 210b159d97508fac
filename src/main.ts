/** Entry point: read config, build adapters, start the roles, stop gracefully on SIGTERM/SIGINT. */
import { loadConfig } from './config.js';
import { createLogger, createPlatform } from './platform.js';

const config = loadConfig();
const logger = createLogger(config);
const platform = await createPlatform(config, { logger });
const { httpUrl, socketPort } = await platform.start();
if (config.operatorTokenGenerated) {
  // Printed once, to the terminal only: it is the key to the operator API for this run.
  process.stdout.write(`OPERATOR_TOKEN (generated for this run; set OPERATOR_TOKEN to choose one): ${config.operatorToken}\n`);
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
