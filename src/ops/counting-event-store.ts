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
  const appendToStreams: EventStore['appendToStreams'] = async (appends: StreamAppend[]) => {
    const result = await store.appendToStreams(appends);
    let n = 0;
    for (const a of appends) n += a.events.length;
    metrics.eventsAppended(n);
    return result;
  };
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'appendToStream') return appendToStream;
      if (prop === 'appendToStreams') return appendToStreams;
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}
