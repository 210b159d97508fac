/** Answers assembled from JSON pieces equal JSON.stringify of the whole, and stay current when a piece changes. */
import { describe, expect, it } from 'vitest';
import { jsonArrayOnce, jsonOf, slot, stringifyWith } from '../../src/queries/json.js';

describe('JSON answers from pieces', () => {
  it('stringifyWith puts raw JSON where the slots are, keeping the key order', () => {
    const agents = [{ id: 1, name: 'A "quoted" \u0000 name' }];
    const out = stringifyWith({ first: 1, agents: slot(0), last: { data: slot(1) } }, [JSON.stringify(agents), '[]']);
    expect(out).toBe(JSON.stringify({ first: 1, agents, last: { data: [] } }));
  });

  it('jsonOf renders a document once; jsonArrayOnce rebuilds only when a piece changed', () => {
    const cache = new WeakMap<object, string>();
    const a = Object.freeze({ n: 1 });
    let renders = 0;
    const render = (d: { n: number }) => (renders++, { n: d.n });
    expect(jsonOf(cache, a, render)).toBe('{"n":1}');
    expect(jsonOf(cache, a, render)).toBe('{"n":1}');
    expect(renders).toBe(1);
    const b = Object.freeze({ n: 2 });
    const first = jsonArrayOnce('test', [jsonOf(cache, a, render), jsonOf(cache, b, render)]);
    expect(first).toBe('[{"n":1},{"n":2}]');
    expect(jsonArrayOnce('test', [jsonOf(cache, a, render), jsonOf(cache, b, render)])).toBe(first);
    const c = Object.freeze({ n: 3 }); // b replaced by a new document
    expect(jsonArrayOnce('test', [jsonOf(cache, a, render), jsonOf(cache, c, render)])).toBe('[{"n":1},{"n":3}]');
  });
});
