/** Do-not-call: dnd first, then the blocked list, numbers compared with and without a leading +. */
import { describe, expect, it } from 'vitest';
import { doNotCallReason, numberSpellings } from '../../src/domain/do-not-call.js';

describe('doNotCallReason', () => {
  it('dnd wins; a blocked number matches in either spelling; anything else may be called', () => {
    expect(doNotCallReason(['9000000666'], true, '9000000666')).toBe('dnd');
    expect(doNotCallReason(['9000000666'], false, '+9000000666')).toBe('blocked');
    expect(doNotCallReason(['+9000000666'], false, '9000000666')).toBe('blocked');
    expect(doNotCallReason(['9000000666'], false, '9000000667')).toBeNull();
    expect(doNotCallReason([], false, '9000000666')).toBeNull();
  });

  it('numberSpellings: as given, without and with +, once each', () => {
    expect(numberSpellings('919876500002')).toEqual(['919876500002', '+919876500002']);
    expect(numberSpellings('+919876500002')).toEqual(['+919876500002', '919876500002']);
  });
});
