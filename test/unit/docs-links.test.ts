/**
 * The README and docs/*.md link only to what exists: every relative link (and image) points to a file
 * of the repository, and every `#anchor` to a heading of its target, as GitHub names headings. A
 * section moved or renamed without its links fails here instead of on a reader.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const pages = ['README.md', ...readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** The text outside fenced code blocks. */
const prose = (md: string) => md.replace(/^([ \t]*)(```|~~~)[^\n]*\n[\s\S]*?^\1\2[ \t]*$/gm, '');

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens; repeats get -1, -2. */
export function anchors(md: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of prose(md).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const text = m[1]!.replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/[`*]/g, '');
    const base = text.toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Relative link targets of a page: `[text](target)` and `![alt](target)`, outside code. */
export function links(md: string): string[] {
  const text = prose(md).replace(/`[^`\n]*`/g, (code) => (code.includes('](') ? '' : code));
  return [...text.matchAll(/!?\[(?:[^\]]|`[^`]*`)*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
    .map((m) => m[1]!)
    .filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t));
}

describe('links in the README and docs/', () => {
  it('finds GitHub anchors as GitHub names them', () => {
    expect([...anchors('# A `b` c: d-e\n## Calls (CONTRACT section 16)\n## x\n## x\n```sh\n# not a heading\n```\n')]).toEqual([
      'a-b-c-d-e',
      'calls-contract-section-16',
      'x',
      'x-1',
    ]);
    expect(links('[a](b.md#c) ![i](d.png) [w](https://x.y) `[no](code.md)`\n```\n[no](block.md)\n```\n')).toEqual(['b.md#c', 'd.png']);
  });

  it.each(pages)('%s: every relative link points to an existing file and heading', (page) => {
    const md = readFileSync(path.join(root, page), 'utf8');
    const broken: string[] = [];
    for (const target of links(md)) {
      const [file, anchor] = target.split('#') as [string, string | undefined];
      const resolved = file === '' ? path.join(root, page) : path.resolve(path.dirname(path.join(root, page)), decodeURI(file));
      if (!existsSync(resolved)) {
        broken.push(`${target}: no such file`);
        continue;
      }
      if (anchor !== undefined && resolved.endsWith('.md') && !anchors(readFileSync(resolved, 'utf8')).has(anchor)) {
        broken.push(`${target}: no heading with that anchor in ${path.relative(root, resolved)}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it.each(pages)('%s: every docs/*.md it names exists', (page) => {
    const md = readFileSync(path.join(root, page), 'utf8');
    const named = [...md.matchAll(/\bdocs\/([\w.-]+\.md)\b/g)].map((m) => m[1]!);
    expect(named.filter((f) => !existsSync(path.join(root, 'docs', f)))).toEqual([]);
  });
});
