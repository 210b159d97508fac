/** A request's child logger is made on its first enabled use (src/http/observability.ts), and logs as the child would. */
import { describe, expect, it } from 'vitest';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { lazyChildLogger } from '../../../src/http/observability.js';

describe('lazyChildLogger', () => {
  it('makes no child for disabled levels, and logs with the bindings once used', () => {
    const lines: Record<string, unknown>[] = [];
    const root = pino({ level: 'info' }, { write: (s: string) => lines.push(JSON.parse(s)) });
    let children = 0;
    const counting = new Proxy(root, {
      get: (target, prop) => (prop === 'child' ? (...a: Parameters<typeof root.child>) => (children++, target.child(...a)) : Reflect.get(target, prop)),
    }) as unknown as FastifyBaseLogger;
    const log = lazyChildLogger(counting, { reqId: 'r-1' }, {});
    log.debug({ a: 1 }, 'not shown');
    log.trace('not shown');
    expect(children).toBe(0);
    log.warn({ code: 'X' }, 'shown');
    log.info('again');
    expect(children).toBe(1);
    expect(lines.map((l) => [l.level, l.reqId, l.msg, l.code])).toEqual([
      [40, 'r-1', 'shown', 'X'],
      [30, 'r-1', 'again', undefined],
    ]);
    expect(log.level).toBe('info');
  });
});
