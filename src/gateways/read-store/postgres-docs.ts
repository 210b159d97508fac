/**
 * The PostgreSQL read store's tables (see postgres.ts): `docs`, `checkpoints`, the finds' key column
 * and their indexes, and what an older version made that they replace.
 */
import { createHash } from 'node:crypto';
import type { FindShape } from './mongodb-indexes.js';

const FIELD = /^[A-Za-z_][A-Za-z0-9_]*$/;
const COLLECTION = /^[A-Za-z0-9_.-]{1,100}$/;

/** A field name, checked: it is written into statements and index expressions. */
export function field(f: string): string {
  if (!FIELD.test(f)) throw new Error(`bad field name ${f}`);
  return f;
}

/** A collection name as an SQL literal (checked: it is written into statements and index predicates). */
export function literal(collection: string): string {
  if (!COLLECTION.test(collection)) throw new Error(`bad collection name ${collection}`);
  return `'${collection}'`;
}

/**
 * The fields each collection's finds compare or sort on, and the stored generated column that holds
 * just those fields of each document (`keys_<hash of its expression>`): the finds' indexes are on it,
 * not on `doc`, so writing a document whose indexed fields stay the same (an agent's break toggle) is
 * a HOT update: no index entry is added, none of the indexes' jsonb keys is compared. A field missing
 * from the document is missing from it too, so `keys->'f'` is `doc->'f'` for every document.
 */
export function findKeys(shapes: FindShape[]): { fields: Map<string, Set<string>>; column: string; expression: string } {
  const fields = new Map<string, Set<string>>();
  for (const shape of shapes) {
    literal(shape.collection);
    const set = fields.get(shape.collection) ?? new Set<string>();
    for (const f of [...shape.equal, ...(shape.sort ? [shape.sort[0]] : [])]) set.add(field(f));
    fields.set(shape.collection, set);
  }
  // Built of immutable functions only (a generated column's rule): jsonb_set is strict, so a missing field adds nothing.
  const pick = (f: string) => `coalesce(jsonb_set('{}'::jsonb, '{${f}}', doc->'${f}'), '{}'::jsonb)`;
  const cases = [...fields]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([c, fs]) => `WHEN ${literal(c)} THEN ${[...fs].sort().map(pick).join(' || ')}`);
  const expression = cases.length ? `CASE collection ${cases.join(' ')} END` : 'NULL::jsonb';
  return { fields, column: `keys_${createHash('sha256').update(expression).digest('hex').slice(0, 8)}`, expression };
}

export function docsDdl(s: string, shapes: FindShape[]): string {
  const keys = findKeys(shapes);
  const indexes = new Map<string, string>();
  for (const shape of shapes) {
    const cols = shape.equal.map((f) => `(${keys.column}->'${field(f)}')`);
    if (shape.sort && !shape.equal.includes(shape.sort[0])) {
      cols.push(`(${keys.column}->'${field(shape.sort[0])}') ${shape.sort[1] === 1 ? 'ASC NULLS FIRST' : 'DESC NULLS LAST'}`);
    }
    cols.push('id');
    const name = `dk_${shape.collection.replace(/[^a-z0-9]/gi, '_')}_${[...shape.equal, ...(shape.sort ? [`${shape.sort[0]}${shape.sort[1] === 1 ? '' : '_desc'}`] : [])].join('_')}`
      .toLowerCase()
      .slice(0, 63);
    indexes.set(name, `CREATE INDEX IF NOT EXISTS ${name} ON ${s}.docs (${cols.join(', ')}) WHERE collection = ${literal(shape.collection)}`);
  }
  const kept = ['docs_pkey', 'docs_expiry', ...indexes.keys()].map((n) => `'${n}'`).join(', ');
  return `
CREATE TABLE IF NOT EXISTS ${s}.docs (
  collection text COLLATE "C" NOT NULL,
  id text COLLATE "C" NOT NULL,
  doc jsonb NOT NULL,
  expires_at bigint,
  position bigint,
  PRIMARY KEY (collection, id)
);
CREATE INDEX IF NOT EXISTS docs_expiry ON ${s}.docs (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS ${s}.checkpoints (name text COLLATE "C" PRIMARY KEY, position bigint NOT NULL);
ALTER TABLE ${s}.docs ADD COLUMN IF NOT EXISTS ${keys.column} jsonb GENERATED ALWAYS AS (${keys.expression}) STORED;
-- What finds no longer use: the key columns of other shapes (their indexes go with them), and the
-- indexes on doc an older version made (any of them would make every document write add index entries).
DO $do$
DECLARE r record;
BEGIN
  FOR r IN SELECT attname FROM pg_attribute WHERE attrelid = '${s}.docs'::regclass AND left(attname, 5) = 'keys_' AND attname <> '${keys.column}' AND NOT attisdropped LOOP
    EXECUTE format('ALTER TABLE ${s}.docs DROP COLUMN %I', r.attname);
  END LOOP;
  FOR r IN SELECT indexname FROM pg_indexes WHERE schemaname = '${s}' AND tablename = 'docs' AND indexname NOT IN (${kept}) LOOP
    EXECUTE format('DROP INDEX ${s}.%I', r.indexname);
  END LOOP;
END
$do$;
${[...indexes.values()].join(';\n')};
`;
}

