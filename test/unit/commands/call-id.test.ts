import { describe, expect, it } from 'vitest';
import { newCallId } from '../../../src/commands/call/place.js';

describe('newCallId', () => {
  it('is a UUID of version 7 whose first 48 bits are the time it was made', () => {
    const before = Date.now();
    const id = newCallId();
    const after = Date.now();
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const ms = parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(after);
  });

  it('sorts in the order the ids were made, and never repeats', () => {
    const ids = Array.from({ length: 10_000 }, () => newCallId());
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
