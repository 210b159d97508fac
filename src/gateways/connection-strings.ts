/**
 * Connection strings checked by the drivers' own parsers, before anything connects: what a driver
 * takes (multi-host KurrentDB clusters, MongoDB replica sets and `mongodb+srv://`, Redis Cluster seed
 * lists) is accepted, anything else refused with a message that never shows a password.
 * `new URL()` cannot be the check: a host list (`a:2113,b:2113`) is not a URL.
 */
import { parseConnectionString as parseKurrentDb } from '@kurrent/kurrentdb-client/dist/Client/parseConnectionString.js';
import { MongoClient } from 'mongodb';
import { normalizeConnectionString } from './event-store/kurrentdb-mapping.js';

const KURRENTDB_SCHEME = /^(esdb|kurrentdb|kurrent|kdb)(\+discover)?:\/\//i;

/** Null when the KurrentDB client parses `url`, else why not. */
export function kurrentDbUrlProblem(url: string): string | null {
  if (!KURRENTDB_SCHEME.test(url)) return 'must start with kurrentdb://, kurrentdb+discover://, kdb://, esdb:// (or esdb+discover://, kurrent://)';
  try {
    // Normalised first, as the adapter connects: the client warns on `esdb://` and its bridge parses one form.
    parseKurrentDb(normalizeConnectionString(url));
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

/** Null when the MongoDB driver parses `url` (it connects only on `connect()`), else why not. */
export function mongoDbUrlProblem(url: string): string | null {
  if (!/^mongodb(\+srv)?:\/\//i.test(url)) return 'must start with mongodb:// or mongodb+srv://';
  try {
    new MongoClient(url);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

/** Where the Redis servers are: one server (`redis://`, `rediss://`) or a cluster's seed nodes. */
export interface RedisTarget {
  cluster: boolean;
  /** The URL as ioredis takes it, for one server. */
  url: string;
  /** A cluster's seed nodes (every node it finds is used; one is enough to start). */
  nodes: { host: string; port: number }[];
  username?: string;
  password?: string;
  tls: boolean;
}

/**
 * `redis://[user:pass@]host:port[/db]` (one server) or `redis+cluster://[user:pass@]host:port,host:port`
 * (a Redis Cluster: the seed nodes; `rediss+cluster://` with TLS). Throws with what is wrong.
 */
export function parseRedisUrl(url: string): RedisTarget {
  const m = /^(rediss?)(\+cluster)?:\/\/(?:([^@/]*)@)?([^/?#]*)(\/\d*)?\/?$/i.exec(url);
  if (!m) throw new Error('must be redis://host:port (or rediss://), or redis+cluster://host:port,host:port,... for a Redis Cluster');
  const tls = m[1]!.toLowerCase() === 'rediss';
  const [user, pass] = m[3] === undefined ? [] : m[3].includes(':') ? [m[3].slice(0, m[3].indexOf(':')), m[3].slice(m[3].indexOf(':') + 1)] : ['', m[3]];
  const nodes = m[4]!.split(',').map((hp) => {
    const h = /^(\[[0-9a-f:.]+\]|[A-Za-z0-9_.-]+)(?::(\d{1,5}))?$/i.exec(hp.trim());
    const port = Number(h?.[2] ?? 6379);
    if (!h || port < 1 || port > 65535) throw new Error(`"${hp}" is not host:port`);
    return { host: h[1]!.replace(/^\[|\]$/g, ''), port };
  });
  const cluster = Boolean(m[2]);
  if (!cluster && nodes.length > 1) throw new Error('names several hosts: a Redis Cluster is redis+cluster://host:port,host:port,...');
  if (cluster && m[5] && m[5] !== '/' && m[5] !== '/0') throw new Error('a Redis Cluster has only database 0');
  return {
    cluster,
    url,
    nodes,
    username: user ? decodeURIComponent(user) : undefined,
    password: pass ? decodeURIComponent(pass) : undefined,
    tls,
  };
}
