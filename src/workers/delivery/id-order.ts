/**
 * Where time-ordered delivery ids begin in the log (deliveryIds' `ordered`). A delivery's id is
 * derived from its causing event, so that replaying the event asks for the same delivery; an event an
 * earlier version may have planned already must therefore keep the v5 id it got then. The first
 * planner of this version to run stores, once, the position after everything stored by then (stream
 * `platform-delivery-ids`, in the log with the events it speaks of, so no read model rebuild or copy
 * can lose it); events from that position on get time-ordered ids, the ones before keep v5 ids.
 */
import type { EventStore } from '../../gateways/event-store/port.js';
import { isEvent } from '../../commands/platform-events.js';
import { retryOnConflict } from '../../commands/retry.js';

export const ID_ORDER_STREAM = 'platform-delivery-ids';

/** The first position whose events get time-ordered delivery ids: stored by the first planner that asks. */
export async function orderedIdsFrom(events: EventStore): Promise<number> {
  // Another process may store it first (a conflict): then theirs is read on the next attempt.
  return retryOnConflict(
    async () => {
      const found = (await events.readStream(ID_ORDER_STREAM)).find((e) => isEvent(e, 'DeliveryIdsOrdered'));
      if (found) return found.data.from;
      // Any event stored so far may have been planned (with a v5 id) by an earlier version.
      const from = (await events.headPosition()) + 1;
      await events.appendToStream(ID_ORDER_STREAM, [{ type: 'DeliveryIdsOrdered', data: { from } }], { expectedRevision: 'no_stream' });
      return from;
    },
    { maxAttempts: 3, giveUp: () => new Error('could not read where time-ordered delivery ids begin') },
  );
}
