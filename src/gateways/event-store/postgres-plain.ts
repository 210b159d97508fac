/**
 * The PostgreSQL event store's usual append, `append_plain`: a group of commands whose streams and
 * event ids are all distinct and whose ids are new (what nearly every group is), sent as arrays and
 * stored by a few set-based statements, with no JSON to take apart and no loop per command. Any other
 * group, and one in which the function finds an id already stored (a resend, a retried request),
 * goes to the general `append_events` (postgres-schema.ts), which decides the same way.
 *
 * With the streams distinct no command of the group changes the head another one checks, so every
 * expectation is checked against the stored heads at once: a command with one failing expectation is
 * refused whole, the others are stored one after another in the group's order.
 */
import { jsonbSafe, lockKey } from '../postgres.js';
import { channelOf } from './postgres-schema.js';
import type { SentAppend } from './postgres-tail.js';

export function plainAppendDdl(schema: string): string {
  const s = schema;
  return `
-- a_*: one entry per append (its command's number, its number in the command, stream, expectation as
-- text, time, event count); e_*: one per event, in the appends' order. Answers as append_events does,
-- or NULL when an id is already stored.
CREATE OR REPLACE FUNCTION ${s}.append_plain(a_cmd integer[], a_idx integer[], a_stream text[], a_exp text[], a_time bigint[], a_count integer[],
  e_app integer[], e_id text[], e_type text[], e_data json[], e_meta json[]) RETURNS jsonb LANGUAGE plpgsql
-- Generic plans: the statements' custom plans, made again on every call, cost as much as running them.
-- No sequential scans: a generic plan made while the log was small would scan it whole once it grew.
SET jit = off SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $fn$
DECLARE
  start bigint;
  added bigint;
  outcomes jsonb;
BEGIN
  PERFORM pg_advisory_xact_lock(${lockKey(`ct-log:${s}`)});
  IF EXISTS (SELECT 1 FROM ${s}.events WHERE id = ANY(e_id)) THEN
    RETURN NULL;
  END IF;
  SELECT position INTO start FROM ${s}.log_head;
  WITH a AS (
    SELECT u.ai, u.ci, u.idx, u.stream, u.n, u.t, coalesce(st.revision, -1) AS hr, coalesce(st.position, 0) AS hp,
      CASE u.exp WHEN 'any' THEN true WHEN 'no_stream' THEN st.revision IS NULL WHEN 'stream_exists' THEN st.revision IS NOT NULL
        ELSE coalesce(st.revision, -1) = u.exp::integer END AS ok
    FROM unnest(a_cmd, a_idx, a_stream, a_exp, a_time, a_count) WITH ORDINALITY AS u(ci, idx, stream, exp, t, n, ai)
    LEFT JOIN ${s}.streams st ON st.stream_id = u.stream
  ), c AS (
    SELECT a.*, bool_and(a.ok) OVER (PARTITION BY a.ci) AS cmd_ok FROM a
  ), acc AS (
    -- The accepted appends with the position of their last event.
    SELECT c.ai, c.stream, c.n, c.t, c.hr, start + sum(c.n) OVER (ORDER BY c.ai) AS last FROM c WHERE c.cmd_ok
  ), ins AS (
    INSERT INTO ${s}.events (position, id, stream_id, revision, type, data, metadata, time)
    SELECT acc.last - acc.n + e.k, e.id, acc.stream, acc.hr + e.k, e.type, e.data, e.meta, acc.t
    FROM (SELECT x.*, row_number() OVER (PARTITION BY x.ai ORDER BY x.ei) AS k
          FROM unnest(e_app, e_id, e_type, e_data, e_meta) WITH ORDINALITY AS x(ai, id, type, data, meta, ei)) e
    JOIN acc ON acc.ai = e.ai
  ), up AS (
    INSERT INTO ${s}.streams (stream_id, revision, position)
    SELECT acc.stream, acc.hr + acc.n, acc.last FROM acc WHERE acc.n > 0
    ON CONFLICT (stream_id) DO UPDATE SET revision = excluded.revision, position = excluded.position
  ), r AS (
    SELECT c.ci, c.ai, c.idx, c.ok, c.cmd_ok, c.hr,
      CASE WHEN c.n = 0 THEN jsonb_build_array(c.hr, c.hp, 0) ELSE jsonb_build_array(c.hr + c.n, acc.last, c.n) END AS res
    FROM c LEFT JOIN acc ON acc.ai = c.ai
  ), o AS (
    SELECT r.ci, CASE WHEN bool_and(r.cmd_ok) THEN jsonb_build_object('ok', jsonb_agg(r.res ORDER BY r.ai))
      ELSE (array_agg(jsonb_build_object('conflict', r.idx - 1, 'actual', r.hr) ORDER BY r.ai) FILTER (WHERE NOT r.ok))[1] END AS outcome
    FROM r GROUP BY r.ci
  )
  SELECT (SELECT coalesce(sum(acc.n), 0) FROM acc), (SELECT jsonb_agg(o.outcome ORDER BY o.ci) FROM o) INTO added, outcomes;
  IF added > 0 THEN
    UPDATE ${s}.log_head SET position = start + added;
    PERFORM pg_notify('${channelOf(s)}', (start + added)::text);
  END IF;
  RETURN jsonb_build_object('start', start, 'outcomes', outcomes);
END
$fn$;
`;
}

/** The arguments of `append_plain` for a group of commands, or null when the group is not plain. */
export function plainArgs(commands: SentAppend[][]): unknown[] | null {
  const streams = new Set<string>();
  const ids = new Set<string>();
  const a: [number[], number[], string[], string[], number[], number[]] = [[], [], [], [], [], []];
  const e: [number[], string[], string[], string[], (string | null)[]] = [[], [], [], [], []];
  let ai = 0;
  for (let ci = 0; ci < commands.length; ci++) {
    const appends = commands[ci]!;
    for (let idx = 0; idx < appends.length; idx++) {
      const x = appends[idx]!;
      if (streams.has(x.s)) return null;
      streams.add(x.s);
      ai++;
      a[0].push(ci + 1);
      a[1].push(idx + 1);
      a[2].push(x.s);
      a[3].push(String(x.x));
      a[4].push(x.t);
      a[5].push(x.ev.length);
      for (const ev of x.ev) {
        if (ids.has(ev.i)) return null;
        ids.add(ev.i);
        e[0].push(ai);
        e[1].push(ev.i);
        e[2].push(ev.y);
        e[3].push(ev.d);
        e[4].push(ev.m);
      }
    }
  }
  return [...a, ...e];
}

export const plainSql = (schema: string) =>
  `SELECT ${schema}.append_plain($1::integer[], $2::integer[], $3::text[], $4::text[], $5::bigint[], $6::integer[], $7::integer[], $8::text[], $9::text[], $10::json[], $11::json[]) AS r`;



/** JSON text as stored: PostgreSQL's JSON functions refuse the NUL character, stored as U+FFFD. */
export function jsonText(value: unknown): string {
  const text = JSON.stringify(value) as string | undefined;
  if (text === undefined) throw new TypeError('an event holds a value JSON cannot hold');
  return jsonbSafe(text);
}

/** A group as append_events takes it: [[{s, x, t, ev: [{i, y, d, m}]}]], from the texts already made. */
export function batchJson(commands: SentAppend[][]): string {
  const str = JSON.stringify;
  return `[${commands.map((appends) => `[${appends.map((a) => `{"s":${str(a.s)},"x":${str(a.x)},"t":${a.t},"ev":[${a.ev.map((e) => `{"i":${str(e.i)},"y":${str(e.y)},"d":${e.d},"m":${e.m ?? 'null'}}`).join(',')}]}`).join(',')}]`).join(',')}]`;
}
