/** Every row of every table of a SQLite file, in a stable order: two files compared table by table. */
import Database from 'better-sqlite3';

export function dumpSqlite(file: string): Record<string, string[]> {
  const db = new Database(file, { readonly: true });
  try {
    const tables = db.prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all();
    const rows = (name: string) => db.prepare(`SELECT * FROM "${name}"`).raw().all().map((r) => JSON.stringify(r)).sort();
    return Object.fromEntries(tables.map(({ name }) => [name, rows(name)]));
  } finally {
    db.close();
  }
}
