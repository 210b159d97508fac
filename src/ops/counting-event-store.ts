/**
 * Counts the events this process appends (`telephony_events_appended_total`) without touching the
 * adapters: a proxy over the event store port that observes the two append calls' results.
 */
import type { EventStore, StreamAppend } from '../gateways/event-store/port.js';
import type { PlatformMetrics } from './metrics.js';

export function countingAppends(store: EventStore, metrics: PlatformMetrics): EventStore {
  const appendToStream: EventStore['appendToStream'] = async (streamId, events, options) => {
    const result = await store.appendToStream(streamId, events, options);
    metrics.eventsAppended(events.length);
    return result;
  };
  const appendToStreams: EventStore['appendToStreams'] = async (appends: StreamAppend[], options) => {
    const result = await store.appendToStreams(appends, options);
    let n = 0;
    for (const a of appends) n += a.events.length;
    metrics.eventsAppended(n);
    return result;
  };
  // Other methods run on the store itself, bound once (not on every call: reads are a hot path).
  const bound = new Map<PropertyKey, { fn: unknown; as: unknown }>();
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'appendToStream') return appendToStream;
      if (prop === 'appendToStreams') return appendToStreams;
      const v = Reflect.get(target, prop, target);
      if (typeof v !== 'function') return v;
      let b = bound.get(prop);
      if (!b || b.fn !== v) bound.set(prop, (b = { fn: v, as: v.bind(target) }));
      return b.as;
    },
  });
}
