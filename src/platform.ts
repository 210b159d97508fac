/**
 * Builds the platform from config: adapters behind the ports, then the roles this process runs.
 * Used by main, the CLI, end-to-end tests and the benchmark alike.
 */
import path from 'node:path';
import { readFile } from 'node:fs/promises';
import pino, { type Logger } from 'pino';
import type { FastifyInstance } from 'fastify';
import type { Config } from './config.js';
import type { Context } from './context.js';
import type { EventStore } from './gateways/event-store/port.js';
import type { ReadStore } from './gateways/read-store/port.js';
import { SqliteEventStore } from './gateways/event-store/sqlite.js';
import { SqliteReadStore } from './gateways/read-store/sqlite.js';
import { ProjectionRunner } from './projections/runner.js';
import { projections } from './projections/index.js';
import { localReadSync, remoteReadSync } from './projections/read-sync.js';
import { buildApp } from './http/app.js';
import { applyProvisioning } from './commands/provisioning/provision.js';
import { EventSocketServer } from './workers/socket/server.js';

export interface Platform {
  ctx: Context;
  app: FastifyInstance | null;
  runner: ProjectionRunner | null;
  /** The event socket (role `socket`). */
  socket: EventSocketServer | null;
  /** Listens on the configured ports; resolves with the HTTP address and the event socket's port. */
  start(): Promise<{ httpUrl: string | null; socketPort: number | null }>;
  /** Graceful: stop accepting, finish in-flight requests, stop workers, close stores. */
  stop(): Promise<void>;
}

export function createLogger(config: Config): Logger {
  return pino({
    level: config.logLevel,
    // Secrets never reach the log.
    redact: { paths: ['req.headers.authorization', 'password', '*.password', '*.passwordHash', 'secret', '*.secret', 'socketKey'], censor: '[redacted]' },
  });
}

export function openEventStore(config: Config, now: () => number): EventStore {
  if (config.eventStoreUrl) {
    throw new Error('EVENTSTORE_URL: the KurrentDB adapter is not part of this build yet; unset it to use the embedded store');
  }
  return new SqliteEventStore(path.join(config.dataDir, 'events.db'), now);
}

export function openReadStore(config: Config, now: () => number): ReadStore {
  if (config.mongodbUrl) {
    throw new Error('MONGODB_URL: the MongoDB adapter is not part of this build yet; unset it to use the embedded store');
  }
  return new SqliteReadStore(path.join(config.dataDir, 'read.db'), now);
}

export async function createPlatform(config: Config, options: { logger?: Logger; now?: () => number } = {}): Promise<Platform> {
  const logger = options.logger ?? createLogger(config);
  const now = options.now ?? Date.now;
  const events = openEventStore(config, now);
  const reads = openReadStore(config, now);
  const runner = config.roles.has('projector') ? new ProjectionRunner(events, reads, projections, { logger }) : null;
  const sync = runner ? localReadSync(events, runner) : remoteReadSync(events, reads, projections.map((p) => p.name));
  const ctx: Context = { config, events, reads, sync, logger, now };
  const app = config.roles.has('api') ? await buildApp(ctx) : null;
  const socket = config.roles.has('socket') ? new EventSocketServer(ctx, { host: config.host, port: config.socketPort }) : null;
  let stopped = false;

  return {
    ctx,
    app,
    runner,
    socket,
    async start() {
      if (runner) await runner.start();
      if (config.provisionFile) {
        const doc = JSON.parse(await readFile(config.provisionFile, 'utf8'));
        const result = await applyProvisioning(events, doc);
        await sync.waitFor(result.position);
        logger.info({ file: config.provisionFile, appended: result.appended }, 'provisioning file applied');
      }
      let httpUrl: string | null = null;
      if (app) httpUrl = await app.listen({ host: config.host, port: config.port });
      const socketPort = socket ? (await socket.start()).port : null;
      return { httpUrl, socketPort };
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      if (socket) await socket.stop();
      if (app) await app.close();
      if (runner) await runner.stop();
      await reads.close();
      await events.close();
    },
  };
}
