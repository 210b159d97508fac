import { describe, expect, it } from 'vitest';
import { LineSplitter, keyMatches, parseAuth } from '../../src/workers/socket/protocol.js';

describe('event socket protocol', () => {
  it('splits on \\n and \\r\\n, keeps a partial line pending', () => {
    const s = new LineSplitter(100);
    expect(s.push('a\r\nb\nc')).toEqual({ lines: ['a', 'b'], overflow: false });
    expect(s.hasPending).toBe(true);
    expect(s.push('d\r')).toEqual({ lines: [], overflow: false });
    expect(s.push('\n')).toEqual({ lines: ['cd'], overflow: false });
    expect(s.hasPending).toBe(false);
    s.push('101:key\r');
    expect(s.takePending()).toBe('101:key');
  });

  it('reports overflow for a line over the bound, with or without its newline', () => {
    expect(new LineSplitter(4).push('12345')).toMatchObject({ overflow: true });
    expect(new LineSplitter(4).push('12345\n')).toMatchObject({ overflow: true });
    expect(new LineSplitter(4).push('1234\n1234')).toEqual({ lines: ['1234'], overflow: false });
  });

  it('parses <svc_id>:<key>', () => {
    expect(parseAuth('101:k-101-secret')).toEqual({ svcId: 101, key: 'k-101-secret' });
    expect(parseAuth('101:a:b')).toEqual({ svcId: 101, key: 'a:b' });
    expect(parseAuth('abc:x')).toBeNull();
    expect(parseAuth(':x')).toBeNull();
    expect(parseAuth('nokey')).toBeNull();
  });

  it('compares keys; a service without a key refuses all', () => {
    expect(keyMatches('k', 'k')).toBe(true);
    expect(keyMatches('k', 'k2')).toBe(false);
    expect(keyMatches('', '')).toBe(false);
    expect(keyMatches('', null)).toBe(false);
    expect(keyMatches('x', undefined)).toBe(false);
  });
});
