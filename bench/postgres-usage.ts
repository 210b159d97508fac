/**
 * What a scenario cost PostgreSQL (BENCH_DATABASE_URL), per request: the CPU of the server processes
 * serving the bench's database (read from /proc, so only when the server runs on this host), its
 * commits and rows written (pg_stat_database), and the WAL written (pg_current_wal_lsn: the whole
 * server's, so other users of a shared server count too).
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';

export interface PgSample {
  /** Per backend pid: its CPU ms and what it ran last (appends, read-store commits, reads, listen). */
  byPid: Map<number, { ms: number; kind: string }>;
  commits: number;
  rows: number;
  walBytes: number;
}

const TICK_MS = 10; // USER_HZ 100 on Linux

function cpuMsOf(pid: number): number | null {
  try {
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * TICK_MS;
  } catch {
    return null;
  }
}

const kindOf = (query: string) =>
  /append_(plain|events)/.test(query) ? 'appends' : /^WITH w AS/.test(query) ? 'read-store commits' : /^LISTEN/.test(query) ? 'listen' : 'reads';

/** A sampler on its own connection, or null when the server's processes cannot be read here. */
export async function pgUsage(url: string): Promise<{ sample: () => Promise<PgSample>; close: () => Promise<void> } | null> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const sample = async (): Promise<PgSample> => {
    const r = await client.query<{ pid: number; query: string; commits: string; rows: string; wal: string }>(
      `SELECT a.pid, a.query, d.xact_commit AS commits, d.tup_inserted + d.tup_updated + d.tup_deleted AS rows,
         pg_current_wal_lsn() - '0/0' AS wal
       FROM pg_stat_activity a, pg_stat_database d
       WHERE a.datname = current_database() AND d.datname = current_database() AND a.pid <> pg_backend_pid()`,
    );
    const byPid = new Map<number, { ms: number; kind: string }>();
    for (const row of r.rows) {
      const ms = cpuMsOf(row.pid);
      if (ms !== null) byPid.set(row.pid, { ms, kind: kindOf(row.query) });
    }
    const first = r.rows[0];
    return { byPid, commits: Number(first?.commits ?? 0), rows: Number(first?.rows ?? 0), walBytes: Number(first?.wal ?? 0) };
  };
  if (cpuMsOf((await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid) === null) {
    await client.end();
    return null;
  }
  return { sample, close: () => client.end() };
}

/**
 * One line: PostgreSQL's CPU a request (backends alive at both samples, new ones from zero; split by
 * what each backend ran last, rough for a pool's), commits, rows written and WAL.
 */
export function usageLine(before: PgSample, after: PgSample, requests: number): string {
  const per = (n: number) => n / Math.max(1, requests);
  const kinds = new Map<string, number>();
  let cpu = 0;
  for (const [pid, { ms, kind }] of after.byPid) {
    const d = ms - (before.byPid.get(pid)?.ms ?? 0);
    cpu += d;
    kinds.set(kind, (kinds.get(kind) ?? 0) + d);
  }
  const split = [...kinds].filter(([, ms]) => ms > 0).map(([k, ms]) => `${k} ${Math.round(per(ms * 1000))}`).join(', ');
  return `PostgreSQL: ${Math.round(per(cpu * 1000))} µs CPU a request (${split}), ${per(after.commits - before.commits).toFixed(3)} commits, ${per(after.rows - before.rows).toFixed(2)} rows written, ${Math.round(per(after.walBytes - before.walBytes))} WAL bytes (the whole server's) a request`;
}
