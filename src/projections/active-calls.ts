/**
 * Read model `active-calls`: one small document per call in progress (`{svcId}`), gone when the
 * call ends, so counting the calls in progress (`telephony_active_calls`) reads only those.
 */
import type { Projection } from './projection.js';

export interface ActiveCallDoc extends Record<string, unknown> {
  svcId: number;
}

export const activeCallsProjection: Projection<ActiveCallDoc> = {
  name: 'active-calls',
  keys: (e) => {
    if (e.type !== 'CallStarted' && e.type !== 'CallEnded') return [];
    const xnid = (e.data as { xnid?: string }).xnid;
    return xnid ? [xnid] : [];
  },
  evolve: (_doc, e) => (e.type === 'CallStarted' ? { svcId: (e.data as { svcId: number }).svcId } : null),
};
