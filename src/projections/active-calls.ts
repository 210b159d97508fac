/**
 * Read model `active-calls`: one small document per call in progress (`{svcId}`), gone when the
 * call ends, so counting the calls in progress (`telephony_active_calls`) reads only those.
 */
import type { CallStartedData } from '../commands/call/call.js';
import { projection, type Projection } from './projection.js';

export interface ActiveCallDoc extends Pick<CallStartedData, 'svcId'>, Record<string, unknown> {}

export const activeCallsProjection: Projection<ActiveCallDoc> = projection({
  name: 'active-calls',
  canHandle: ['CallStarted', 'CallEnded'],
  keys: (e) => (e.data.xnid ? [e.data.xnid] : []),
  evolve: (_doc, e) => (e.type === 'CallStarted' ? { svcId: e.data.svcId } : null),
});
