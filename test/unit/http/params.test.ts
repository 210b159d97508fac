/** Parameter coercion of CONTRACT section 2 (src/http/params.ts). */
import { describe, expect, it } from 'vitest';
import { coerce, lastValues, normalize, toJsonSchema, type ParamSpecs } from '../../../src/http/params.js';
import { AppError } from '../../../src/domain/errors.js';

const refuses = (specs: ParamSpecs, input: Record<string, unknown>, field: string) => {
  let caught: unknown;
  try {
    coerce(specs, input);
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(AppError);
  expect(caught).toMatchObject({ status: 400, code: 'INVALID_PARAMETER' });
  expect((caught as Error).message).toContain(field);
};

describe('coerce', () => {
  it('integers: base-10 digit strings and JSON integers, with ranges', () => {
    const specs = { 'svc-id': { type: 'integer', min: 1, max: 1000 } } as const;
    expect(coerce(specs, { 'svc-id': '101' })).toEqual({ 'svc-id': 101 });
    expect(coerce(specs, { 'svc-id': ' 007 ' })).toEqual({ 'svc-id': 7 });
    expect(coerce(specs, { 'svc-id': 101 })).toEqual({ 'svc-id': 101 });
    for (const bad of ['abc', '1.5', '1e3', '0x10', '12abc', 1.5, true, '99999999999999999']) refuses(specs, { 'svc-id': bad }, 'svc-id');
    refuses(specs, { 'svc-id': '0' }, 'svc-id');
    refuses(specs, { 'svc-id': '1001' }, 'svc-id');
  });

  it('epoch: a non-negative integer of milliseconds', () => {
    const specs = { at: { type: 'epoch' } } as const;
    expect(coerce(specs, { at: '1700000000000' })).toEqual({ at: 1_700_000_000_000 });
    refuses(specs, { at: '-5' }, 'at');
  });

  it('booleans: true/false/1/0 as text, JSON booleans and 1/0 numbers', () => {
    const specs = { recording: { type: 'boolean' } } as const;
    for (const [raw, value] of [
      ['true', true],
      ['false', false],
      ['1', true],
      ['0', false],
      ['TRUE', true],
      [true, true],
      [false, false],
      [1, true],
      [0, false],
    ] as const) {
      expect(coerce(specs, { recording: raw })).toEqual({ recording: value });
    }
    for (const bad of ['yes', 'no', '2', 2, 'on']) refuses(specs, { recording: bad }, 'recording');
  });

  it('phone numbers: 6 to 15 digits with an optional +, also as a JSON number', () => {
    const specs = { number: { type: 'phone' } } as const;
    expect(coerce(specs, { number: '9876543210' })).toEqual({ number: '9876543210' });
    expect(coerce(specs, { number: '+919876543210' })).toEqual({ number: '+919876543210' });
    expect(coerce(specs, { number: 919876543210 })).toEqual({ number: '919876543210' });
    expect(coerce(specs, { number: '123456' })).toEqual({ number: '123456' });
    for (const bad of ['12345', '1234567890123456', '98765-43210', 'abc', '++9876543210']) refuses(specs, { number: bad }, 'number');
  });

  it('lists: comma-separated, trimmed, empty items dropped, bounded', () => {
    const specs = { ids: { type: 'list', maxItems: 3 } } as const;
    expect(coerce(specs, { ids: 'a, b,,c ' })).toEqual({ ids: ['a', 'b', 'c'] });
    refuses(specs, { ids: 'a,b,c,d' }, 'ids');
    refuses(specs, { ids: 5 }, 'ids');
  });

  it('strings: numbers and booleans become text; length and enum are checked', () => {
    const specs = { name: { type: 'string', minLength: 2, maxLength: 5 }, kind: { type: 'string', enum: ['http', 'webhook'] } } as const;
    expect(coerce(specs, { name: 12345 })).toEqual({ name: '12345' });
    expect(coerce(specs, { name: ' ab ' })).toEqual({ name: ' ab ' });
    refuses(specs, { name: 'toolong' }, 'name');
    refuses(specs, { name: 'a' }, 'name');
    refuses(specs, { kind: 'sms' }, 'kind');
    refuses(specs, { name: { nested: true } }, 'name');
  });

  it('uuids are checked and lower-cased', () => {
    const specs = { id: { type: 'uuid' } } as const;
    expect(coerce(specs, { id: '6F1C2A43-79B8-4A40-9A65-0D3AB7F2C001' })).toEqual({ id: '6f1c2a43-79b8-4a40-9a65-0d3ab7f2c001' });
    refuses(specs, { id: 'not-a-uuid' }, 'id');
  });

  it('a missing, null or empty required parameter is 400 naming it; optional ones are left out', () => {
    const specs = { new: { type: 'string', required: true }, 'svc-id': { type: 'integer' } } as const;
    refuses(specs, {}, 'new is required');
    refuses(specs, { new: '' }, 'new is required');
    refuses(specs, { new: null }, 'new is required');
    expect(coerce(specs, { new: 'pw', 'svc-id': '' })).toEqual({ new: 'pw' });
    expect('svc-id' in coerce(specs, { new: 'pw' })).toBe(false);
  });

  it('a repeated query parameter takes its last value; unknown parameters are ignored', () => {
    const specs = { 'svc-id': { type: 'integer' } } as const;
    expect(coerce(specs, { 'svc-id': ['1', '2'], other: 'x' })).toEqual({ 'svc-id': 2 });
  });

  it('a JSON array or object for a single value is refused naming it, never read as an item', () => {
    const specs = { 'svc-id': { type: 'integer' }, number: { type: 'phone' }, on: { type: 'boolean' }, ids: { type: 'list' } } as const;
    const refusesNow = (input: Record<string, unknown>, field: string) => {
      expect(() => normalize(specs, input)).toThrow(AppError);
      expect(() => normalize(specs, input)).toThrow(field);
    };
    refusesNow({ 'svc-id': ['1'] }, 'svc-id');
    refusesNow({ number: ['9876543210'] }, 'number');
    refusesNow({ on: [true] }, 'on');
    refusesNow({ number: { a: 1 } }, 'number');
    refusesNow({ ids: { a: 'x' } }, 'ids');
    expect(normalize(specs, { ids: ['a', 'b'] })).toEqual({ ids: ['a', 'b'] });
    expect(lastValues({ a: ['1', '2'], b: 'x' })).toEqual({ a: '2', b: 'x' });
    const plain = { a: '1' };
    expect(lastValues(plain)).toBe(plain);
  });

  it('documents the parameters as JSON Schema', () => {
    const schema = toJsonSchema({ 'svc-id': { type: 'integer', min: 1, required: true }, number: { type: 'phone' }, on: { type: 'boolean' } });
    expect(schema).toMatchObject({
      type: 'object',
      required: ['svc-id'],
      properties: { 'svc-id': { type: 'integer', minimum: 1 }, number: { type: 'string' }, on: { type: 'boolean' } },
    });
  });
});
