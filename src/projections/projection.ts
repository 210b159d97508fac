/** A projection is a pure function from (document, event) to document, keyed by the ids an event touches. */
import type { RecordedEvent } from '../gateways/event-store/port.js';
import type { Doc } from '../gateways/read-store/port.js';
import type { EventType, Recorded } from '../commands/platform-events.js';

export interface Projection<D extends Doc = Doc> {
  /** Checkpoint name; also the collection unless `collection` is set. */
  name: string;
  collection?: string;
  /** The event types it reads: `keys` is empty for every other. */
  canHandle?: readonly string[];
  /**
   * Run apart, behind the others (see `ReadSync`): requests do not wait for it, only the readers of
   * its documents do. For a read model no request reads whose events come in bulk (a dialer upload's
   * 100,000 contacts): every other tenant's request would wait for them.
   */
  lagging?: boolean;
  /** Ids of the documents this event changes (empty: none). */
  keys(event: RecordedEvent): string[];
  /** The new document, or null to delete it. Must be pure. Called only with ids `keys` gave for the event. */
  evolve(doc: D | null, event: RecordedEvent, id: string): D | null;
}

/** A projection as written: it names the event types it handles and sees only those, typed. */
export interface ProjectionDefinition<D extends Doc, T extends EventType> {
  name: string;
  collection?: string;
  canHandle: readonly T[];
  lagging?: boolean;
  keys(event: Recorded<T>): string[];
  evolve(doc: D | null, event: Recorded<T>, id: string): D | null;
}

/**
 * The runner's projection from a typed definition: events of other types get no keys (so never
 * reach `evolve`, which the runner calls only with the ids `keys` gave).
 */
export function projection<D extends Doc, T extends EventType>(def: ProjectionDefinition<D, T>): Projection<D> {
  const handled = new Set<string>(def.canHandle);
  const { keys, evolve } = def;
  const typed = (e: RecordedEvent) => e as Recorded<T>;
  return {
    name: def.name,
    ...(def.collection === undefined ? {} : { collection: def.collection }),
    canHandle: def.canHandle,
    ...(def.lagging ? { lagging: true } : {}),
    keys: (e) => (handled.has(e.type) ? keys(typed(e)) : []),
    evolve: (doc, e, id) => evolve(doc, typed(e), id),
  };
}

export const collectionOf = (p: Projection<any>) => p.collection ?? p.name;
