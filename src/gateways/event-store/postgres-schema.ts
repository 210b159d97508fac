/**
 * The PostgreSQL event log's tables and its append function (see postgres.ts for why it is one).
 *
 * - `events`: one row per event; `position` is the global order, `(stream_id, revision)` and `id`
 *   unique. Data and metadata are `json` (the text as written: jsonb would reorder keys and refuse
 *   `\u0000`).
 * - `streams`: each stream's last revision and position, what an append checks its expectation on.
 * - `log_head`: the last position given out.
 *
 * `append_events(batch)` stores a group of commands in one transaction. It first takes the log's
 * advisory lock (per schema), so appends commit one after another in position order: a reader's
 * snapshot then always holds every position up to the highest it sees, and no subscriber can pass a
 * position whose transaction has yet to commit (the gap problem of sequences, where a later position
 * can commit before an earlier one). One query plans every append of the group (stream heads, ids
 * already stored), a loop over that plan checks each command whole (expected revisions against the
 * heads the group's earlier commands left, ids stored in another stream), then one INSERT stores the
 * accepted commands' events: a refused command writes nothing and the others stand, with no savepoint,
 * and the statements per group do not grow with its size. It answers one outcome per command and
 * NOTIFYs `<schema>_events`.
 */
import { lockKey } from '../postgres.js';

export const channelOf = (schema: string) => `${schema}_events`;

export function eventLogDdl(schema: string): string {
  const s = schema;
  return `
CREATE TABLE IF NOT EXISTS ${s}.events (
  position bigint PRIMARY KEY,
  id text COLLATE "C" NOT NULL UNIQUE,
  stream_id text COLLATE "C" NOT NULL,
  revision integer NOT NULL,
  type text NOT NULL,
  data json NOT NULL,
  metadata json,
  time bigint NOT NULL,
  UNIQUE (stream_id, revision)
);
CREATE TABLE IF NOT EXISTS ${s}.streams (stream_id text COLLATE "C" PRIMARY KEY, revision integer NOT NULL, position bigint NOT NULL);
CREATE TABLE IF NOT EXISTS ${s}.log_head (one boolean PRIMARY KEY DEFAULT true CHECK (one), position bigint NOT NULL);
INSERT INTO ${s}.log_head (one, position) VALUES (true, 0) ON CONFLICT DO NOTHING;

-- batch: [[{s: stream, x: expected ('any'|'no_stream'|'stream_exists'|n), t: time ms, ev: [{i, y, d, m}]}]]
-- answers {start: the head before, outcomes: [{ok: [[revision, position, events stored]]} | {conflict} | {dup}]}
-- (no command without appends). Set-based: one query plans every append, one INSERT stores every
-- event, one upsert moves every stream head, whatever the group's size.
CREATE OR REPLACE FUNCTION ${s}.append_events(batch json) RETURNS jsonb LANGUAGE plpgsql SET jit = off AS $fn$
DECLARE
  head bigint;
  start bigint;
  r record;
  cur integer := 0;
  refused jsonb;
  outcomes jsonb := '[]';
  results jsonb;
  touched jsonb := '{}';
  h jsonb;
  hr integer;
  hp bigint;
  fresh integer;
  i integer;
  -- The command being checked: its appends, not yet given positions.
  a_stream text[];
  a_ai integer[];
  a_rev integer[];
  a_pos bigint[];
  a_fresh integer[];
  -- Accepted appends: the revision and position their first fresh event follows.
  p_ci integer[] := '{}';
  p_ai integer[] := '{}';
  p_rev integer[] := '{}';
  p_pos bigint[] := '{}';
BEGIN
  PERFORM pg_advisory_xact_lock(${lockKey(`ct-log:${s}`)});
  SELECT position INTO head FROM ${s}.log_head;
  start := head;
  FOR r IN
    SELECT * FROM (
      SELECT c.ci::integer AS ci, x.ai::integer AS ai, x.app->>'s' AS stream, x.app->>'x' AS expected,
        coalesce(st.revision, -1) AS head_rev, coalesce(st.position, 0) AS head_pos, k.total, k.stored, k.other
      FROM json_array_elements(batch) WITH ORDINALITY AS c(cmd, ci)
      CROSS JOIN LATERAL json_array_elements(c.cmd) WITH ORDINALITY AS x(app, ai)
      CROSS JOIN LATERAL (
        SELECT count(*)::integer AS total,
          count(o.stream_id) FILTER (WHERE o.stream_id = x.app->>'s')::integer AS stored,
          min(o.stream_id) FILTER (WHERE o.stream_id <> x.app->>'s') AS other
        FROM json_array_elements(x.app->'ev') AS e(ev)
        -- One index probe per event (a join here was planned as a scan of the whole log once it grew).
        LEFT JOIN LATERAL (SELECT stored.stream_id FROM ${s}.events stored WHERE stored.id = e.ev->>'i' LIMIT 1) o ON true
      ) k
      LEFT JOIN ${s}.streams st ON st.stream_id = x.app->>'s'
      -- A last row past every command: the loop settles the last command on it.
      UNION ALL SELECT 2147483647, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL
    ) plan ORDER BY ci, ai
  LOOP
    IF r.ci <> cur THEN
      IF cur > 0 THEN
        IF refused IS NOT NULL THEN
          outcomes := outcomes || jsonb_build_array(refused);
        ELSE
          results := '[]';
          FOR i IN 1 .. coalesce(array_length(a_ai, 1), 0) LOOP
            IF a_fresh[i] = 0 THEN
              results := results || jsonb_build_array(jsonb_build_array(a_rev[i], a_pos[i], 0));
            ELSE
              p_ci := p_ci || cur;
              p_ai := p_ai || a_ai[i];
              p_rev := p_rev || a_rev[i];
              p_pos := p_pos || head;
              head := head + a_fresh[i];
              touched := touched || jsonb_build_object(a_stream[i], jsonb_build_array(a_rev[i] + a_fresh[i], head));
              results := results || jsonb_build_array(jsonb_build_array(a_rev[i] + a_fresh[i], head, a_fresh[i]));
            END IF;
          END LOOP;
          outcomes := outcomes || jsonb_build_array(jsonb_build_object('ok', results));
        END IF;
      END IF;
      EXIT WHEN r.ci = 2147483647;
      cur := r.ci;
      refused := NULL;
      a_stream := '{}';
      a_ai := '{}';
      a_rev := '{}';
      a_pos := '{}';
      a_fresh := '{}';
    END IF;
    CONTINUE WHEN refused IS NOT NULL;
    -- The head as an earlier command of this group left it, else as stored.
    h := touched->r.stream;
    IF h IS NULL THEN
      hr := r.head_rev;
      hp := r.head_pos;
    ELSE
      hr := (h->>0)::integer;
      hp := (h->>1)::bigint;
    END IF;
    IF r.other IS NOT NULL THEN
      refused := jsonb_build_object('dup', r.ai - 1, 'stream', r.other);
      CONTINUE;
    END IF;
    IF r.stored > 0 AND r.stored = r.total THEN
      -- Every event already stored: a retry of an append that went through, answered as done.
      fresh := 0;
    ELSIF NOT (CASE r.expected WHEN 'any' THEN true WHEN 'no_stream' THEN hr = -1 WHEN 'stream_exists' THEN hr >= 0 ELSE hr = r.expected::integer END) THEN
      refused := jsonb_build_object('conflict', r.ai - 1, 'actual', hr);
      CONTINUE;
    ELSE
      fresh := r.total - r.stored;
    END IF;
    a_stream := a_stream || r.stream;
    a_ai := a_ai || r.ai;
    a_rev := a_rev || hr;
    a_pos := a_pos || hp;
    a_fresh := a_fresh || fresh;
  END LOOP;
  IF head > start THEN
    INSERT INTO ${s}.events (position, id, stream_id, revision, type, data, metadata, time)
    SELECT p.pos + f.k, f.ev->>'i', f.stream, p.rev + f.k, f.ev->>'y', f.ev->'d', f.ev->'m', f.t
    FROM (
      SELECT c.ci::integer AS ci, x.ai::integer AS ai, e.ev, x.app->>'s' AS stream, (x.app->>'t')::bigint AS t,
        row_number() OVER (PARTITION BY c.ci, x.ai ORDER BY e.ei) AS k
      FROM json_array_elements(batch) WITH ORDINALITY AS c(cmd, ci)
      CROSS JOIN LATERAL json_array_elements(c.cmd) WITH ORDINALITY AS x(app, ai)
      CROSS JOIN LATERAL json_array_elements(x.app->'ev') WITH ORDINALITY AS e(ev, ei)
      -- A per-event index probe, not an anti join (planned as a scan of the whole log).
      WHERE (SELECT 1 FROM ${s}.events o WHERE o.id = e.ev->>'i' LIMIT 1) IS NULL
    ) f
    JOIN unnest(p_ci, p_ai, p_rev, p_pos) AS p(ci, ai, rev, pos) ON p.ci = f.ci AND p.ai = f.ai;
    INSERT INTO ${s}.streams (stream_id, revision, position)
    SELECT key, (value->>0)::integer, (value->>1)::bigint FROM jsonb_each(touched)
    ON CONFLICT (stream_id) DO UPDATE SET revision = excluded.revision, position = excluded.position;
    UPDATE ${s}.log_head SET position = head;
    PERFORM pg_notify('${channelOf(s)}', head::text);
  END IF;
  RETURN jsonb_build_object('start', start, 'outcomes', outcomes);
END
$fn$;
`;
}
