/** A projection is a pure function from (document, event) to document, keyed by the ids an event touches. */
import type { RecordedEvent } from '../gateways/event-store/port.js';
import type { Doc } from '../gateways/read-store/port.js';

export interface Projection<D extends Doc = Doc> {
  /** Checkpoint name; also the collection unless `collection` is set. */
  name: string;
  collection?: string;
  /** Ids of the documents this event changes (empty: none). */
  keys(event: RecordedEvent): string[];
  /** The new document, or null to delete it. Must be pure. */
  evolve(doc: D | null, event: RecordedEvent, id: string): D | null;
}

export const collectionOf = (p: Projection<any>) => p.collection ?? p.name;
