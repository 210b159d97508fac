/**
 * What a failed start means for the person who started it: settings that cannot work (a port in use,
 * a DATA_DIR that cannot be written, a store that does not answer) become one line naming the
 * setting; anything else is a bug and keeps its stack trace.
 */
import { ConfigError, type Config } from './config.js';

export function startupProblem(err: unknown, config: Config): string | null {
  if (err instanceof ConfigError) return err.message;
  // The mongodb driver's: no server answered within serverSelectionTimeoutMS (or the URL is unusable).
  const name = (err as Error | undefined)?.name ?? '';
  if (name === 'MongoServerSelectionError' || name === 'MongoParseError' || name === 'MongoAPIError') {
    return `MONGODB_URL: ${(err as Error).message.split('\n')[0]}`;
  }
  // The database the URL names differs only in case from one the server has: it cannot be created.
  if ((err as { code?: unknown } | undefined)?.code === 13297) return `MONGODB_URL: its database differs only in case from one the server has (${(err as Error).message.split('\n')[0]})`;
  // PostgreSQL's own refusals carry an SQLSTATE (a database that does not exist, a wrong password).
  const sqlState = (err as { code?: unknown } | undefined)?.code;
  if (config.databaseUrl && typeof sqlState === 'string' && /^(08|28|3D|42501)/.test(sqlState)) {
    return `DATABASE_URL: ${(err as Error).message.split('\n')[0]}`;
  }
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number };
  switch (e?.code) {
    case 'EADDRINUSE':
      return `${e.address ?? config.host}:${e.port ?? '?'} is already in use: stop what runs there or set PORT / SOCKET_PORT`;
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
      if (e.syscall === 'listen' || e.syscall === 'getaddrinfo') return `cannot bind to HOST ${config.host}: ${e.code}`;
      return `a store's host was not found (${e.message}): check EVENTSTORE_URL, MONGODB_URL, DATABASE_URL, REDIS_URL`;
    case 'EACCES':
    case 'EPERM':
      if (e.syscall === 'listen') return `no permission to listen on ${config.host}:${e.port ?? config.port}: choose a PORT above 1023`;
      return `DATA_DIR ${config.dataDir} cannot be written (${e.code}${e.path ? ` ${e.path}` : ''}): set DATA_DIR to a writable directory`;
    case 'EROFS':
    case 'ENOTDIR':
      return `DATA_DIR ${config.dataDir} cannot be used (${e.code}): set DATA_DIR to a writable directory`;
    case 'ECONNREFUSED':
      return `a store refused the connection (${e.message}): check EVENTSTORE_URL, MONGODB_URL, DATABASE_URL, REDIS_URL or start the server`;
    default:
      return null;
  }
}
