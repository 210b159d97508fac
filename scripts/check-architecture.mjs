#!/usr/bin/env node
/**
 * Checks the rules docs/architecture.md sets out for src/ (run by CI):
 * - no file imports from a higher floor (type-only imports included: a type is a dependency too);
 * - no import circle between files;
 * - no source file over 400 lines.
 * Known exceptions, each a debt to pay back, are listed in scripts/architecture-debts.json: the
 * check fails on any violation not listed there, and on a listed one that no longer occurs (so the
 * list only shrinks).
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const src = path.join(root, 'src');
const MAX_LINES = 400;

/** The floors, lowest first: a file may import from its own floor and the ones below it. */
export const FLOORS = [
  ['domain', ['domain']],
  ['ports and adapters, configuration, observability', ['gateways', 'config.ts', 'ops']],
  ['commands, projections and queries', ['commands', 'projections', 'queries', 'analytics', 'context.ts']],
  ['workers', ['workers']],
  ['http', ['http']],
  ['assembly', ['platform.ts', 'sip-setup.ts', 'startup.ts', 'main.ts', 'cli']],
];

const floorOf = (file) => {
  const top = path.relative(src, file).split(path.sep)[0];
  const i = FLOORS.findIndex(([, parts]) => parts.includes(top));
  if (i < 0) throw new Error(`${path.relative(root, file)}: on no floor; add its folder to FLOORS in scripts/check-architecture.mjs`);
  return i;
};

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? walk(p) : p.endsWith('.ts') ? [p] : [];
  });
}

const IMPORT_RE = /^\s*(?:import|export)\s+(?:type\s+)?[^'";]*?from\s+['"](\.[^'"]+)['"]|^\s*import\s+['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/gm;

export function check() {
  const files = walk(src);
  const rel = (f) => path.relative(root, f);
  const graph = new Map();
  const found = [];
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    if (lines > MAX_LINES) found.push(`long: ${rel(file)}`);
    const deps = new Set();
    for (const m of text.matchAll(IMPORT_RE)) {
      const spec = m[1] ?? m[2] ?? m[3];
      const target = path.resolve(path.dirname(file), spec.replace(/\.js$/, '.ts'));
      if (!target.startsWith(src) || deps.has(target)) continue;
      deps.add(target);
      if (floorOf(target) > floorOf(file)) found.push(`up: ${rel(file)} -> ${rel(target)}`);
    }
    graph.set(file, deps);
  }
  // Circles: strongly connected components of more than one file (Tarjan).
  let index = 0;
  const idx = new Map(), low = new Map(), stack = [], on = new Set();
  const strong = (v) => {
    idx.set(v, index); low.set(v, index); index++; stack.push(v); on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!idx.has(w)) { strong(w); low.set(v, Math.min(low.get(v), low.get(w))); }
      else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const comp = [];
      let w;
      do { w = stack.pop(); on.delete(w); comp.push(rel(w)); } while (w !== v);
      if (comp.length > 1) found.push(`circle: ${comp.sort().join(' <-> ')}`);
    }
  };
  for (const f of files) if (!idx.has(f)) strong(f);
  return found.sort();
}

if (process.argv[1] === import.meta.filename) {
  const debtsFile = path.join(root, 'scripts/architecture-debts.json');
  const debts = new Set(JSON.parse(readFileSync(debtsFile, 'utf8')).debts);
  const found = check();
  const fresh = found.filter((f) => !debts.has(f));
  const paid = [...debts].filter((d) => !found.includes(d));
  if (process.argv.includes('--list')) { console.log(JSON.stringify(found, null, 2)); process.exit(0); }
  for (const f of fresh) console.error(`architecture: ${f}`);
  for (const d of paid) console.error(`architecture: paid back, remove from scripts/architecture-debts.json: ${d}`);
  if (fresh.length || paid.length) process.exit(1);
  console.log(`architecture: ${found.length} known debts (scripts/architecture-debts.json), nothing new`);
}
