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
 * can commit before an earlier one). Each command is checked whole (expected revisions, ids stored in
 * another stream) before any of its rows is written, so a refused command writes nothing and the
 * others stand, with no savepoint. It answers one outcome per command and NOTIFYs `<schema>_events`.
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
CREATE OR REPLACE FUNCTION ${s}.append_events(batch json) RETURNS jsonb LANGUAGE plpgsql AS $fn$
DECLARE
  cmd json;
  app json;
  head bigint;
  start bigint;
  outcomes jsonb := '[]';
  results jsonb;
  refused jsonb;
  revs integer[];
  poss bigint[];
  skip boolean[];
  i integer;
  cur_rev integer;
  cur_pos bigint;
  ids text[];
  stored integer;
  other text;
  x text;
  added integer;
BEGIN
  PERFORM pg_advisory_xact_lock(${lockKey(`ct-log:${s}`)});
  SELECT position INTO head FROM ${s}.log_head;
  start := head;
  FOR cmd IN SELECT value FROM json_array_elements(batch) LOOP
    refused := NULL;
    revs := '{}';
    poss := '{}';
    skip := '{}';
    i := 0;
    -- Every check of the command before any of its writes.
    FOR app IN SELECT value FROM json_array_elements(cmd) LOOP
      i := i + 1;
      SELECT revision, position INTO cur_rev, cur_pos FROM ${s}.streams WHERE stream_id = app->>'s';
      IF NOT FOUND THEN cur_rev := -1; cur_pos := 0; END IF;
      ids := ARRAY(SELECT value->>'i' FROM json_array_elements(app->'ev'));
      other := NULL;
      SELECT stream_id INTO other FROM ${s}.events WHERE id = ANY(ids) AND stream_id <> app->>'s' LIMIT 1;
      IF other IS NOT NULL THEN
        refused := jsonb_build_object('dup', i - 1, 'stream', other);
        EXIT;
      END IF;
      SELECT count(*) INTO stored FROM ${s}.events WHERE id = ANY(ids);
      revs := revs || cur_rev;
      poss := poss || cur_pos;
      -- Every event already stored: a retry of an append that went through, answered as done.
      IF stored > 0 AND stored = cardinality(ids) THEN
        skip := skip || true;
        CONTINUE;
      END IF;
      skip := skip || false;
      x := app->>'x';
      IF NOT (CASE x WHEN 'any' THEN true WHEN 'no_stream' THEN cur_rev = -1 WHEN 'stream_exists' THEN cur_rev >= 0 ELSE cur_rev = x::integer END) THEN
        refused := jsonb_build_object('conflict', i - 1, 'actual', cur_rev);
        EXIT;
      END IF;
    END LOOP;
    IF refused IS NOT NULL THEN
      outcomes := outcomes || jsonb_build_array(refused);
      CONTINUE;
    END IF;
    results := '[]';
    i := 0;
    FOR app IN SELECT value FROM json_array_elements(cmd) LOOP
      i := i + 1;
      IF skip[i] THEN
        results := results || jsonb_build_array(jsonb_build_array(revs[i], poss[i]));
        CONTINUE;
      END IF;
      INSERT INTO ${s}.events (position, id, stream_id, revision, type, data, metadata, time)
      SELECT head + k, e->>'i', app->>'s', revs[i] + k, e->>'y', e->'d', e->'m', (app->>'t')::bigint
      FROM (
        SELECT e, row_number() OVER (ORDER BY n) AS k
        FROM json_array_elements(app->'ev') WITH ORDINALITY AS ev(e, n)
        WHERE NOT EXISTS (SELECT 1 FROM ${s}.events o WHERE o.id = e->>'i')
      ) fresh;
      GET DIAGNOSTICS added = ROW_COUNT;
      IF added > 0 THEN
        head := head + added;
        INSERT INTO ${s}.streams (stream_id, revision, position) VALUES (app->>'s', revs[i] + added, head)
        ON CONFLICT (stream_id) DO UPDATE SET revision = excluded.revision, position = excluded.position;
        results := results || jsonb_build_array(jsonb_build_array(revs[i] + added, head));
      ELSE
        results := results || jsonb_build_array(jsonb_build_array(revs[i], poss[i]));
      END IF;
    END LOOP;
    outcomes := outcomes || jsonb_build_array(jsonb_build_object('ok', results));
  END LOOP;
  IF head > start THEN
    UPDATE ${s}.log_head SET position = head;
    PERFORM pg_notify('${channelOf(s)}', head::text);
  END IF;
  RETURN outcomes;
END
$fn$;
`;
}
